import type { ErpSize } from './erpData.js';
import type { HistorySizes } from './history.js';
import type { BatchShape } from './jobs.js';

export interface Sizes {
  push: { drivers: number; deliveries: number; positions: number; durationMs: number; warmupMs: number } & BatchShape;
  pushSmall: { drivers: number; deliveries: number; positions: number; durationMs: number; warmupMs: number; thinkMs: number } & BatchShape;
  floor: { durationMs: number; warmupMs: number; connections: number };
  tourRead: { deliveries: number; positions: number; iterations: number; warmup: number };
  wire: { deliveries: number; positions: number; iterations: number; warmup: number };
  fanout: { accounts: number; clientsPerAccount: number; commitsPerSecond: number; durationMs: number };
  import: ErpSize;
  history: HistorySizes;
}

export const fullSizes: Sizes = {
  push: { drivers: 50, deliveries: 40, positions: 4, deliveriesPerBatch: 10, eventsPerDelivery: 10, durationMs: 20_000, warmupMs: 3000 },
  pushSmall: {
    drivers: 100,
    deliveries: 10,
    positions: 4,
    deliveriesPerBatch: 1,
    eventsPerDelivery: 5,
    thinkMs: 200,
    durationMs: 20_000,
    warmupMs: 3000,
  },
  floor: { durationMs: 15_000, warmupMs: 2000, connections: 10 },
  tourRead: { deliveries: 40, positions: 20, iterations: 300, warmup: 30 },
  wire: { deliveries: 11, positions: 12, iterations: 200, warmup: 20 },
  fanout: { accounts: 100, clientsPerAccount: 10, commitsPerSecond: 20, durationMs: 15_000 },
  import: { tours: 200, deliveries: 30, positions: 15 },
  history: {
    company: { drivers: 100, deliveries: 25, positions: 12 },
    days: { month: 21, year: 250 },
    iterations: 30,
    allIterations: 3,
    push: { drivers: 20, deliveries: 20, positions: 4, deliveriesPerBatch: 10, eventsPerDelivery: 10, durationMs: 10_000, warmupMs: 2000 },
    import: { tours: 100, deliveries: 25, positions: 12 },
  },
};

/** Small enough for a test run: the scenarios' behaviour, not their speed. */
export const tinySizes: Sizes = {
  push: { drivers: 3, deliveries: 4, positions: 2, deliveriesPerBatch: 2, eventsPerDelivery: 5, durationMs: 500, warmupMs: 0 },
  pushSmall: {
    drivers: 3,
    deliveries: 2,
    positions: 2,
    deliveriesPerBatch: 1,
    eventsPerDelivery: 5,
    thinkMs: 20,
    durationMs: 500,
    warmupMs: 0,
  },
  floor: { durationMs: 500, warmupMs: 0, connections: 2 },
  tourRead: { deliveries: 3, positions: 3, iterations: 5, warmup: 1 },
  wire: { deliveries: 4, positions: 6, iterations: 3, warmup: 1 },
  fanout: { accounts: 3, clientsPerAccount: 2, commitsPerSecond: 10, durationMs: 1000 },
  import: { tours: 3, deliveries: 3, positions: 3 },
  history: {
    company: { drivers: 3, deliveries: 4, positions: 3 },
    days: { month: 2, year: 4 },
    iterations: 2,
    allIterations: 1,
    push: { drivers: 2, deliveries: 2, positions: 2, deliveriesPerBatch: 1, eventsPerDelivery: 5, durationMs: 300, warmupMs: 0 },
    import: { tours: 3, deliveries: 3, positions: 3 },
  },
};
