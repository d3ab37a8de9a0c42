/** The SDK against a real test service: a driver with a tour, client options through the fault injector, and the view check. */
import { afterEach, expect } from 'vitest';
import { TourlineClient, type TourlineClientOptions } from '../../client-sdk/index.js';
import type { TourDetails } from '../../shared/schemas/deliveries.js';
import { newTour } from '../helpers/factories.js';
import type { TestServer } from '../helpers/server.js';
import type { FaultyNetwork } from '../../test-server/network.js';
import { FaultInjector, SDK_BASE_URL } from './faults.js';

/** What a test opened (servers, clients, folders), closed after it in reverse order. */
export const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

let nextPnr = 70_000 + Math.floor(Math.random() * 10_000) * 10;

/** A driver with a tour: delivery 1 has a line of 3 pieces to scan and a service line; delivery 2 has 50 EUR open. */
export async function driverWithTour(server: TestServer) {
  const pnr = nextPnr++;
  await server.seedAccount(pnr);
  const seeded = await newTour(server.db, {
    accountId: pnr,
    deliveries: 2,
    openAmountCents: 0,
    positions: [
      { scannable: true, quantity: 3, scannedQuantity: 0, state: 'InProgress', unitPriceCents: 1000 },
      { scannable: false, quantity: 1 },
    ],
  });
  return { pnr, seeded, tourId: seeded.tour.id };
}

/**
 * A client through `faults`: the fault injector, the SDK's fetch that forwards to whichever server
 * runs now, or the test server package's loopback proxy in front of one server (HTTP and WebSocket).
 */
export function sdkOptions(
  server: () => TestServer,
  pnr: number,
  faults: FaultInjector | FaultyNetwork,
  extra: Partial<TourlineClientOptions> = {},
): TourlineClientOptions {
  return {
    ...(faults instanceof FaultInjector ? { baseUrl: SDK_BASE_URL, fetch: faults.fetch } : { baseUrl: faults.url }),
    // A fresh token from the identity provider of whichever server runs now.
    getToken: () => server().issueToken(pnr),
    webSocket: null,
    backoff: { baseMs: 20, capMs: 200 },
    pollIntervalMs: 100,
    ...extra,
  };
}

export async function openClient(options: TourlineClientOptions) {
  const client = await TourlineClient.open(options);
  cleanups.push(() => client.close());
  return client;
}

/** Calls sync() until nothing waits; failures in between are the injected faults. */
export async function syncUntilSettled(client: TourlineClient, attempts = 40) {
  for (let i = 0; i < attempts; i++) {
    try {
      await client.sync();
    } catch {
      /* retried */
    }
    if (client.outbox.all().every((e) => e.state === 'rejected')) return;
  }
  throw new Error(`outbox not settled: ${JSON.stringify(client.status())}`);
}

/** Arrays in the tour read follow server orderings (creation time); compare them as sets. */
export function normalize(tour: TourDetails | undefined) {
  const sort = <T>(list: T[], key: (x: T) => string) => [...list].sort((a, b) => key(a).localeCompare(key(b)));
  const id = (x: { id: string }) => x.id;
  return (
    tour && {
      ...tour,
      customers: sort(tour.customers, id),
      articles: sort(tour.articles, id),
      warehouses: sort(tour.warehouses, id),
      deliveries: sort(tour.deliveries, id).map((d) => ({
        ...d,
        positions: sort(d.positions, id),
        contacts: sort(d.contacts, id),
        notes: sort(d.notes, id),
        attachments: sort(d.attachments, id),
        serviceValues: sort(d.serviceValues, (v) => v.serviceId),
      })),
    }
  );
}

export async function expectViewEqualsServer(client: TourlineClient, server: TestServer, pnr: number, tourId: string) {
  const read = await server.get<TourDetails>(`/tours/${tourId}`, { token: await server.token(pnr) });
  expect(read.status).toBe(200);
  expect(normalize(client.view(tourId))).toEqual(normalize(read.body));
}
