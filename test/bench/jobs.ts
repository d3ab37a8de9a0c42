/** The jobs of the load process (load.ts): each runs for a bounded time and returns raw measurements. */
import pg from 'pg';
import { newId } from '../../shared/ids.js';
import { request } from './http.js';
import { floorBatch, type FloorExecutor } from './floorSql.js';
import { runFanout } from './fanoutJob.js';
import { monotonicMs, sleep } from './stats.js';
import type { Driver } from './seed.js';

export interface BatchShape {
  /** Deliveries one batch touches, in tour order, continuing where the driver's last batch stopped. */
  deliveriesPerBatch: number;
  eventsPerDelivery: number;
}

export interface PushJob extends BatchShape {
  kind: 'push';
  url: string;
  drivers: Driver[];
  durationMs: number;
  warmupMs: number;
  /** Pause after each answer; 0 pushes again at once. */
  thinkMs: number;
  /** Each push carries a device health report, every one kept (`--device-reports`). */
  deviceReports?: boolean;
}

export interface FloorJob extends BatchShape {
  kind: 'floor';
  databaseUrl: string;
  drivers: Driver[];
  connections: number;
  durationMs: number;
  warmupMs: number;
}

export interface TourReadJob {
  kind: 'tour_read';
  url: string;
  token: string;
  tourId: string;
  iterations: number;
  warmup: number;
  /** Then as many reads again, each after a note was added to this delivery of the tour (measured apart). */
  changeDeliveryId: string;
}

export interface FanoutJob {
  kind: 'fanout';
  url: string;
  accounts: { token: string; deliveryId: string; itemId: string }[];
  clientsPerAccount: number;
  commitsPerSecond: number;
  durationMs: number;
}

export type LoadJob = PushJob | FloorJob | TourReadJob | FanoutJob;

export interface Measured {
  /** Latency samples in ms, after the warm-up. */
  latencies: number[];
  /** Units done after the warm-up (events, requests, receipts). */
  count: number;
  requests: number;
  elapsedMs: number;
  /** The load process's own CPU time (user and system) over the measured window, in ms; timed jobs only. */
  cpuMs?: number;
  errors: string[];
  extra?: Record<string, number>;
  /** tour_read: the reads that each followed a change of the tour. */
  changedLatencies?: number[];
}

export type ScanEvent = { eventId: string; occurredAt: string; type: 'scan'; deliveryItemId: string; action: 'scan' };

/** Yields each driver's batches: whole runs of events on consecutive deliveries of the tour. */
export function batchMaker(driver: Driver, shape: BatchShape) {
  let nextDelivery = 0;
  let nextItem = 0;
  return (): { deliveryId: string; events: ScanEvent[] }[] => {
    const groups = [];
    for (let d = 0; d < shape.deliveriesPerBatch; d++) {
      const delivery = driver.deliveries[nextDelivery++ % driver.deliveries.length];
      const events: ScanEvent[] = [];
      for (let e = 0; e < shape.eventsPerDelivery; e++) {
        events.push({
          eventId: newId(), // as the SDK makes them: time-ordered
          occurredAt: new Date().toISOString(),
          type: 'scan',
          deliveryItemId: delivery.items[nextItem++ % delivery.items.length],
          action: 'scan',
        });
      }
      groups.push({ deliveryId: delivery.id, events });
    }
    return groups;
  };
}

/** The measured window's edges, told to the bench as they pass: it times the service's CPU over them. */
export type WindowMark = 'measuring' | 'done';
export type OnMark = (mark: WindowMark) => void;

/**
 * Runs `worker` for every slot until the deadline; samples taken during the warm-up are dropped.
 * Answers the measured window's length and the CPU time this process spent in it.
 */
async function timed(
  durationMs: number,
  warmupMs: number,
  slots: number,
  worker: (slot: number, measuring: () => boolean, done: () => boolean) => Promise<void>,
  onMark: OnMark = () => undefined,
) {
  const start = monotonicMs();
  const measureFrom = start + warmupMs;
  const end = measureFrom + durationMs;
  let cpuFrom: NodeJS.CpuUsage | undefined;
  let cpuMs = 0;
  const endWindow = () => {
    if (!cpuFrom) return;
    const used = process.cpuUsage(cpuFrom);
    cpuFrom = undefined;
    cpuMs = (used.user + used.system) / 1000;
    onMark('done');
  };
  const marks = [
    setTimeout(() => {
      cpuFrom = process.cpuUsage();
      onMark('measuring');
    }, warmupMs),
    setTimeout(endWindow, warmupMs + durationMs),
  ];
  try {
    await Promise.all(
      Array.from({ length: slots }, (_, slot) =>
        worker(
          slot,
          () => monotonicMs() >= measureFrom,
          () => monotonicMs() >= end,
        ),
      ),
    );
  } finally {
    for (const mark of marks) clearTimeout(mark);
    // The workers stop at `end`, which may come a moment before the timer set a little after it.
    endWindow();
  }
  return { elapsedMs: Math.max(1, Math.min(monotonicMs(), end + 60_000) - measureFrom), cpuMs };
}

/** When the bench's phones completed the stops they hold: a completion's time does not change between reports. */
const completedAt = new Date().toISOString();

/**
 * A phone's report as the SDK sends it with a push: two completions waiting, the times of the
 * last push and pull moving on. A driver's pushes take turns among 8 device ids, so that each id
 * comes at most once a second (the service's cap); every push carries one, where the SDK sends
 * one a minute or on a change.
 */
function deviceReport(personalnummer: number, push: number) {
  const deviceId = `00000000-0000-4000-8000-${String(personalnummer * 10 + (push % 8)).padStart(12, '0')}`;
  const pushedAt = new Date().toISOString();
  return {
    deviceId,
    sdkVersion: '0.2.0',
    appName: 'Bench',
    appVersion: '1.0.0',
    platform: 'node',
    pendingCount: 2,
    oldestPending: { ageMs: 1000, type: 'delivery.complete', deliveryId: deviceId },
    pendingCompletionCount: 2,
    pendingCompletions: [1, 2].map((n) => ({ deliveryId: `${deviceId.slice(0, -1)}${n}`, completedAt })),
    rejectedCount: 0,
    outboxBytes: 2400,
    attachmentBytes: 8000,
    lastPushAt: pushedAt,
    lastPullAt: pushedAt,
    lastErrorCode: null,
  };
}

async function runPush(job: PushJob, onMark: OnMark): Promise<Measured> {
  const out: Measured = { latencies: [], count: 0, requests: 0, elapsedMs: 0, errors: [] };
  Object.assign(
    out,
    await timed(
      job.durationMs,
      job.warmupMs,
      job.drivers.length,
      async (slot, measuring, done) => {
        const driver = job.drivers[slot];
        const next = batchMaker(driver, job);
        let pushes = 0;
        // Spread the drivers' first requests over the think time, as phones would.
        if (job.thinkMs) await sleep(Math.random() * job.thinkMs);
        while (!done()) {
          const events = next().flatMap((g) => g.events);
          const started = monotonicMs();
          const counted = measuring();
          const device = job.deviceReports ? deviceReport(driver.personalnummer, pushes++) : undefined;
          const reply = await request('POST', `${job.url}/sync/push`, {
            token: driver.token,
            body: { clientId: `bench-${driver.personalnummer}`, events, device },
          });
          const finished = monotonicMs();
          if (reply.status !== 200) {
            if (out.errors.length < 5) out.errors.push(`${reply.status} ${reply.text.slice(0, 200)}`);
            continue;
          }
          const { results } = JSON.parse(reply.text) as { results: { status: string; code?: string }[] };
          const applied = results.filter((r) => r.status === 'applied').length;
          if (applied !== events.length && out.errors.length < 5)
            out.errors.push(`not applied: ${JSON.stringify(results.find((r) => r.status !== 'applied'))}`);
          if (counted) {
            out.latencies.push(finished - started);
            out.count += applied;
            out.requests += 1;
          }
          if (job.thinkMs) await sleep(job.thinkMs);
        }
      },
      onMark,
    ),
  );
  return out;
}

/** The same rows as the engine writes for these batches, with plain SQL: the database's own limit for this work. */
async function runFloor(job: FloorJob): Promise<Measured> {
  const pool = new pg.Pool({ connectionString: job.databaseUrl, max: job.connections });
  try {
    return await runFloorWith(job, async (work) => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await work((text, params) => client.query(text, params));
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    });
  } finally {
    await pool.end();
  }
}

/** The floor's batches through any transaction runner (PGlite runs it in the process that holds the database). */
export async function runFloorWith(job: Omit<FloorJob, 'kind' | 'databaseUrl' | 'connections'>, exec: FloorExecutor): Promise<Measured> {
  const out: Measured = { latencies: [], count: 0, requests: 0, elapsedMs: 0, errors: [] };
  Object.assign(
    out,
    await timed(job.durationMs, job.warmupMs, job.drivers.length, async (slot, measuring, done) => {
      const driver = job.drivers[slot];
      const next = batchMaker(driver, job);
      while (!done()) {
        const groups = next();
        const started = monotonicMs();
        const counted = measuring();
        try {
          await floorBatch(exec, driver, groups);
        } catch (error) {
          if (out.errors.length < 5) out.errors.push(String(error));
          continue;
        }
        if (counted) {
          out.latencies.push(monotonicMs() - started);
          out.count += groups.reduce((n, g) => n + g.events.length, 0);
          out.requests += 1;
        }
      }
    }),
  );
  return out;
}

async function runTourRead(job: TourReadJob): Promise<Measured> {
  const out: Measured = { latencies: [], count: 0, requests: 0, elapsedMs: 0, errors: [], changedLatencies: [] };
  const read = async () => {
    const t0 = monotonicMs();
    const reply = await request('GET', `${job.url}/tours/${job.tourId}`, { token: job.token });
    const ms = monotonicMs() - t0;
    if (reply.status !== 200 && out.errors.length < 5) out.errors.push(`${reply.status} ${reply.text.slice(0, 200)}`);
    out.extra ??= { bytes: reply.text.length };
    return reply.status === 200 ? ms : undefined;
  };
  const started = monotonicMs();
  for (let i = 0; i < job.warmup + job.iterations; i++) {
    const ms = await read();
    if (ms !== undefined && i >= job.warmup) out.latencies.push(ms);
  }
  out.count = out.requests = out.latencies.length;
  out.elapsedMs = monotonicMs() - started;
  for (let i = 0; i < job.iterations; i++) {
    const note = await request('POST', `${job.url}/deliveries/${job.changeDeliveryId}/notes`, {
      token: job.token,
      body: { text: `Notiz ${i}` },
    });
    if (note.status >= 300 && out.errors.length < 5) out.errors.push(`note: ${note.status} ${note.text.slice(0, 200)}`);
    const ms = await read();
    if (ms !== undefined) out.changedLatencies!.push(ms);
  }
  return out;
}

export const runJob = (job: LoadJob, onMark: OnMark): Promise<Measured> => {
  switch (job.kind) {
    case 'push':
      return runPush(job, onMark);
    case 'floor':
      return runFloor(job);
    case 'tour_read':
      return runTourRead(job);
    case 'fanout':
      return runFanout(job);
  }
};
