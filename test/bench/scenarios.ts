import { spawn, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import type { PGlite } from '@electric-sql/pglite';
import { notes } from '../../server/db/schema.js';
import type { Db } from '../../server/db/client.js';
import type { RunningServer } from '../../server/server.js';
import { addContact, newTour } from '../helpers/factories.js';
import { benchErp, type ErpSize } from './erpData.js';
import type { HistorySizes } from './history.js';
import { request, requestJson } from './http.js';
import { runFloorWith, type BatchShape, type LoadJob, type Measured, type OnMark, type WindowMark } from './jobs.js';
import { freePort } from '../helpers/embeddedPostgres.js';
import { seedDrivers, settle } from './seed.js';
import { latencies, monotonicMs, round, sleep } from './stats.js';
import { BENCH_ADMIN_KEY, startBenchServer, type DatabaseKind, type Target } from './target.js';

export type Metrics = Record<string, number>;
export type Results = Record<string, Metrics>;

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

export interface BenchContext {
  kind: DatabaseKind;
  sizes: Sizes;
  newTarget(name: string): Promise<Target>;
  log(message: string): void;
  /** The push scenario's pushes carry a device health report each (`--device-reports`). */
  deviceReports?: boolean;
  /** Whatever went wrong besides timing (refused requests, lost changes); the smoke test expects none. */
  problems: string[];
}

const loadScript = fileURLToPath(new URL('./load.ts', import.meta.url));

type LoadMessage = { mark: WindowMark } | { ok: boolean; result?: Measured; error?: string };

/** Runs a job in a forked load process; the service stays alone in this one. */
export function runLoad(job: LoadJob, onMark: OnMark = () => undefined): Promise<Measured> {
  const child = fork(loadScript, [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  child.send(job);
  return new Promise((resolve, reject) => {
    child.on('message', (message: LoadMessage) => {
      if ('mark' in message) onMark(message.mark);
      else if (message.ok) resolve(message.result!);
      else reject(new Error(`load process: ${message.error}`));
    });
    child.once('exit', (code) => reject(new Error(`load process exited with ${code} before answering`)));
  });
}

function reportErrors(ctx: BenchContext, scenario: string, measured: Measured) {
  for (const error of measured.errors) problem(ctx, `${scenario}: ${error}`);
}

export function problem(ctx: BenchContext, message: string) {
  ctx.problems.push(message);
  ctx.log(`  ${message}`);
}

export async function withServer<T>(
  target: Target,
  work: (server: RunningServer) => Promise<T>,
  options: Parameters<typeof startBenchServer>[1] = {},
): Promise<T> {
  const server = await startBenchServer(target, options);
  try {
    return await work(server);
  } finally {
    await server.close();
    target.dispose();
  }
}

/**
 * push, floor and push_small on one seeded database. The floor writes the same rows as push
 * with plain SQL (through `pg` from the load process; on PGlite through its own client, the
 * only way in); floor_ratio = push ÷ floor.
 */
export async function writeScenarios(ctx: BenchContext, which: { push: boolean; floor: boolean; pushSmall: boolean }): Promise<Results> {
  const { push, pushSmall, floor } = ctx.sizes;
  const target = await ctx.newTarget('writes');
  return withServer(target, async (server) => {
    const results: Results = {};
    ctx.log(`  seeding ${push.drivers + pushSmall.drivers} drivers`);
    const drivers = await seedDrivers(server, {
      first: 50_001,
      count: push.drivers,
      deliveries: push.deliveries,
      positions: push.positions,
    });
    const small = which.pushSmall
      ? await seedDrivers(server, {
          first: 60_001,
          count: pushSmall.drivers,
          deliveries: pushSmall.deliveries,
          positions: pushSmall.positions,
        })
      : [];

    // Each scenario starts from a checkpoint: the gigabytes of WAL that floor and push write would
    // otherwise have PostgreSQL checkpoint in the middle of the next one, whose tail then measures
    // that (push_small p99 117–178 against 44 ms).
    const checkpoint = () => server.ctx.database.db.execute(sql`CHECKPOINT`);
    if (which.floor) {
      await checkpoint();
      ctx.log('  floor');
      const job = { drivers, deliveriesPerBatch: push.deliveriesPerBatch, eventsPerDelivery: push.eventsPerDelivery, ...floor };
      const measured =
        ctx.kind === 'postgres'
          ? await runLoad({ kind: 'floor', databaseUrl: target.databaseUrl!, ...job })
          : await runFloorWith(job, (work) =>
              pgliteClient(server).transaction(async (tx) => {
                await work((text, params) => tx.query(text, params));
              }),
            );
      reportErrors(ctx, 'floor', measured);
      results.floor = { events_per_s: Math.round(measured.count / (measured.elapsedMs / 1000)) };
    }
    if (which.push) {
      await checkpoint();
      ctx.log('  push');
      const cpu = serviceCpu();
      const measured = await runLoad(
        { kind: 'push', url: server.url, drivers, thinkMs: 0, deviceReports: ctx.deviceReports, ...pick(push) },
        cpu.mark,
      );
      reportErrors(ctx, 'push', measured);
      results.push = {
        events_per_s: Math.round(measured.count / (measured.elapsedMs / 1000)),
        ...latencies(measured.latencies),
        ...cpu.perRequest(measured),
      };
    }
    if (which.pushSmall) {
      await checkpoint();
      ctx.log('  push_small');
      const cpu = serviceCpu();
      const measured = await runLoad(
        { kind: 'push', url: server.url, drivers: small, ...pick(pushSmall), thinkMs: pushSmall.thinkMs },
        cpu.mark,
      );
      reportErrors(ctx, 'push_small', measured);
      results.push_small = {
        ...latencies(measured.latencies),
        requests_per_s: round(measured.requests / (measured.elapsedMs / 1000)),
        ...cpu.perRequest(measured),
      };
    }
    return results;
  });
}

/**
 * The service's CPU time per request over the load's measured window: this process's user and
 * system time, all threads (on PGlite the database too, which runs in it). It varies far less
 * between runs than the tail latencies do, so it shows what a change to the hot path saves.
 * Beside it the load process's, which shares the two vCPUs with the service and the database.
 */
function serviceCpu() {
  let from: NodeJS.CpuUsage | undefined;
  let used: NodeJS.CpuUsage | undefined;
  return {
    mark: (mark: WindowMark) => {
      if (mark === 'measuring') from = process.cpuUsage();
      else if (from) used = process.cpuUsage(from);
    },
    perRequest: (measured: Measured): Metrics =>
      used && measured.requests > 0
        ? {
            service_cpu_ms: round((used.user + used.system) / 1000 / measured.requests, 2),
            ...(measured.cpuMs !== undefined && { load_cpu_ms: round(measured.cpuMs / measured.requests, 2) }),
          }
        : {},
  };
}

const pick = (s: BatchShape & { durationMs: number; warmupMs: number }) => ({
  deliveriesPerBatch: s.deliveriesPerBatch,
  eventsPerDelivery: s.eventsPerDelivery,
  durationMs: s.durationMs,
  warmupMs: s.warmupMs,
});

const pgliteClient = (server: RunningServer) => (server.ctx.database.db as unknown as { $client: PGlite }).$client;

/** The lines of every delivery of a read tour: one in five not scannable, 1 to 6 pieces each. */
export const readTourPositions = (count: number) =>
  Array.from({ length: count }, (_, i) => ({
    scannable: i % 5 !== 4,
    quantity: 1 + (i % 6),
    state: 'InProgress' as const,
    scannedQuantity: 0,
  }));

/** A tour as a driver reads it: two notes and four contacts (with channels) per delivery. */
export function seedReadTour(db: Db, accountId: number, size: { deliveries: number; positions: number }) {
  const positions = readTourPositions(size.positions);
  return db.transaction(async (tx) => {
    const created = await newTour(tx, { accountId, deliveries: size.deliveries, positions, openAmountCents: 4200 });
    for (const { delivery } of created.deliveries) {
      await tx.insert(notes).values([
        { deliveryId: delivery.id, text: 'Bitte Hintereingang benutzen' },
        { deliveryId: delivery.id, text: 'Leergut mitnehmen' },
      ]);
      await addContact(
        tx,
        delivery.id,
        { role: 'header', name1: 'Gasthaus Krone', channels: [{ kind: 'phone', value: '030 1234567' }] },
        1,
      );
      await addContact(tx, delivery.id, { role: 'delivery', name1: 'Gasthaus Krone, Küche' }, 2);
      await addContact(
        tx,
        delivery.id,
        {
          role: 'contact_person',
          name1: 'Erika Mustermann',
          address: null,
          channels: [
            { kind: 'mobile', value: '0171 1234567' },
            { kind: 'email', value: 'erika@example.de' },
          ],
        },
        3,
      );
      await addContact(tx, delivery.id, { role: 'billing', name1: 'Krone GmbH', channels: [] }, 4);
    }
    return created;
  });
}

/**
 * One tour of 40 deliveries × 20 lines, two notes and four contacts (with channels) per delivery,
 * read again and again; then read after each of as many changes (a note added).
 */
export async function tourRead(ctx: BenchContext): Promise<Metrics> {
  const size = ctx.sizes.tourRead;
  const target = await ctx.newTarget('tour_read');
  return withServer(target, async (server) => {
    const { db } = server.ctx.database;
    const tour = await seedReadTour(db, 80_001, size);
    const { accessToken } = await requestJson<{ accessToken: string }>('POST', `${server.url}/dev/token`, {
      admin: BENCH_ADMIN_KEY,
      body: { personalnummer: 80_001 },
    });
    await settle(db);
    const measured = await runLoad({
      kind: 'tour_read',
      url: server.url,
      token: accessToken,
      tourId: tour.tour.id,
      iterations: size.iterations,
      warmup: size.warmup,
      changeDeliveryId: tour.deliveries[0].delivery.id,
    });
    reportErrors(ctx, 'tour_read', measured);
    const before = server.ctx.database.queries.count;
    const reply = await request('GET', `${server.url}/tours/${tour.tour.id}`, { token: accessToken });
    const queries = server.ctx.database.queries.count - before;
    if (reply.status !== 200) problem(ctx, `tour_read: ${reply.status} ${reply.text.slice(0, 200)}`);
    const changed = latencies(measured.changedLatencies!);
    return { ...latencies(measured.latencies), changed_p50_ms: changed.p50_ms, changed_p99_ms: changed.p99_ms, queries };
  });
}

/** 1000 live clients (100 accounts × 10 devices) while 20 small commits a second are pushed. */
export async function fanout(ctx: BenchContext): Promise<Metrics> {
  const size = ctx.sizes.fanout;
  const target = await ctx.newTarget('fanout');
  return withServer(target, async (server) => {
    const drivers = await seedDrivers(server, { first: 90_001, count: size.accounts, deliveries: 1, positions: 1 });
    const measured = await runLoad({
      kind: 'fanout',
      url: server.url,
      clientsPerAccount: size.clientsPerAccount,
      commitsPerSecond: size.commitsPerSecond,
      durationMs: size.durationMs,
      accounts: drivers.map((d) => ({ token: d.token, deliveryId: d.deliveries[0].id, itemId: d.deliveries[0].items[0] })),
    });
    reportErrors(ctx, 'fanout', measured);
    const { expected = 0, missing = 0, connect_ms = 0 } = measured.extra ?? {};
    ctx.log(`  fanout: ${measured.count}/${expected} receipts, ${measured.requests} commits, connected in ${Math.round(connect_ms)} ms`);
    if (missing > 0 || measured.count === 0) problem(ctx, `fanout: ${missing} of ${expected} receipts missing`);
    return latencies(measured.latencies);
  });
}

/** The ERP import of a large day, then the same day again: the second run must change nothing. */
export async function importScenario(ctx: BenchContext): Promise<Metrics> {
  const target = await ctx.newTarget('import');
  return withServer(
    target,
    async (server) => {
      const { db } = server.ctx.database;
      const changes = async () => Number((await db.execute<{ n: string }>(sql`SELECT count(*)::text AS n FROM change_log`)).rows[0].n);
      const run = async () => {
        const t0 = monotonicMs();
        const summary = await requestJson('POST', `${server.url}/admin/import-erp?date=2026-09-01`, { admin: BENCH_ADMIN_KEY });
        const seconds = (monotonicMs() - t0) / 1000;
        if (!summary.success) throw new Error(`import failed: ${JSON.stringify(summary).slice(0, 300)}`);
        return { seconds, summary };
      };
      const first = await run();
      const afterFirst = await changes();
      const again = await run();
      const againChanges = (await changes()) - afterFirst;
      if (againChanges !== 0) problem(ctx, `import: the second run wrote ${againChanges} change records`);
      ctx.log(
        `  import: ${first.summary.deliveries_created} deliveries, ${first.summary.positions_created} positions, ${afterFirst} change records`,
      );
      return { first_s: round(first.seconds, 2), again_s: round(again.seconds, 2), again_changes: againChanges };
    },
    { erp: benchErp(ctx.sizes.import) },
  );
}

/** `npm start` as a process: to the first 200 from /health on an empty database, then on the same one again. */
export async function startup(ctx: BenchContext): Promise<Metrics> {
  const target = await ctx.newTarget('startup');
  try {
    const fresh = await startProcess(target);
    const existing = await startProcess(target);
    return { fresh_ms: Math.round(fresh.ms), existing_ms: Math.round(existing.ms), rss_mb: round(existing.rssMb) };
  } finally {
    target.dispose();
  }
}

async function startProcess(target: Target): Promise<{ ms: number; rssMb: number }> {
  const port = await freePort();
  const main = fileURLToPath(new URL('../../server/main.ts', import.meta.url));
  const started = monotonicMs();
  const child = spawn(process.execPath, ['--import', 'tsx', main], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...target.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode} before answering`);
      const reply = await request('GET', `http://127.0.0.1:${port}/health`).catch(() => undefined);
      if (reply?.status === 200) break;
      if (monotonicMs() - started > 60_000) throw new Error('no 200 from /health within 60 s');
      await sleep(10);
    }
    const ms = monotonicMs() - started;
    // Resident memory once the process has settled, idle.
    await sleep(1000);
    const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
    return { ms, rssMb: rss ? Number(rss[1]) / 1024 : NaN };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}
