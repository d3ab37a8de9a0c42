/**
 * live: how many connected drivers one instance holds. The service runs in a process of its own
 * (started from any checkout, so one load tool measures two versions); N drivers, each with an
 * account, a tour, a token and a WebSocket, push one scan per interval on average from several
 * load processes; some hold a second device, which times the fan-out from the push's answer to
 * its receipt. The same pushes run first with no socket open, for the CPU the sockets add.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { createDevIdentityProvider } from '../../server/auth/devIdentityProvider.js';
import { loadConfig } from '../../server/config.js';
import type { Db } from '../../server/db/client.js';
import { freePort } from '../helpers/embeddedPostgres.js';
import { scriptOptions } from '../helpers/image.js';
import { sampleAddress } from '../helpers/factories.js';
import { describeEngineWrites, readEngineWrites, type EngineWrites } from './engineWrites.js';
import { request, requestJson } from './http.js';
import type { LiveCommand, LiveDriver, LiveReply, LiveRun } from './liveLoad.js';
import type { ServiceUsage } from './liveService.js';
import { sampleWaits } from './pgWaits.js';
import { pushesBetween, readPushBuckets, type PushBuckets } from './servicePushes.js';
import { describeTcp, tcpCounters } from './tcpCounters.js';
import { SLOW_PUSH_MS, describeHostCpu, describeStalls, hostCpu, overlapping, timesBetween, type ThreadTimes } from './stalls.js';
import type { BenchContext, Metrics } from './context.js';
import { percentile, round, monotonicMs, sleep } from './stats.js';
import type { Target } from './target.js';

export interface LiveSizes {
  drivers: number[];
  /** Drivers holding a second device (the fan-out samples). */
  secondDevices: number;
  /** One push per driver per this many ms on average. */
  intervalMs: number;
  warmupMs: number;
  durationMs: number;
  /** Sockets per load process; the machine allows about 20,000 open files per process. */
  socketsPerProcess: number;
}

export interface LiveOptions {
  /** The checkout whose service is measured (default this one). */
  serviceDir?: string;
  /** Writes a CPU profile of the service there (node --cpu-prof). */
  profileDir?: string;
}

export const fullLiveSizes: LiveSizes = {
  drivers: [1000, 5000, 10_000, 15_000],
  secondDevices: 200,
  intervalMs: 30_000,
  warmupMs: 10_000,
  durationMs: 60_000,
  socketsPerProcess: 2500,
};

/** Small enough for a test run: every push applied, every socket kept, every change fanned out. */
export const tinyLiveSizes: LiveSizes = {
  drivers: [50],
  secondDevices: 10,
  intervalMs: 1000,
  warmupMs: 1000,
  durationMs: 4000,
  socketsPerProcess: 40,
};

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
export const thisCheckout = fileURLToPath(new URL('../..', import.meta.url));
const TODAY = '2026-06-01';
const FIRST_DRIVER = 100_001;
/** Scans of each line recorded the day before the run. */
const EARLIER_SCANS_PER_LINE = 10;
const SCRAPE_INTERVAL_MS = 15_000;

export async function live(ctx: BenchContext, size: LiveSizes, options: LiveOptions = {}): Promise<Metrics> {
  if (ctx.kind !== 'postgres') throw new Error('live runs on PostgreSQL only (the service runs in its own process)');
  const figures: Metrics = {};
  for (const drivers of size.drivers) Object.assign(figures, await liveSize(ctx, size, drivers, options));
  return figures;
}

async function liveSize(ctx: BenchContext, size: LiveSizes, count: number, options: LiveOptions): Promise<Metrics> {
  const target = await ctx.newTarget(`live_${count}`);
  const service = await startService(target, options);
  ctx.log(`  service of ${options.serviceDir ?? thisCheckout} at ${service.url}`);
  const loads: LoadProcess[] = [];
  try {
    const t0 = monotonicMs();
    const drivers = await seed(target, service.url, count, size.secondDevices);
    const { cursor } = await requestJson<{ cursor: string }>('GET', `${service.url}/sync/cursor`, { token: drivers[0].token });
    const processes = Math.ceil((count + size.secondDevices) / size.socketsPerProcess);
    for (let p = 0; p < processes; p++) loads.push(startLoad());
    // All booted before the first run: a process still loading when the run starts would send every push it is late
    // for at once, a synchronised burst of new connections that waits in the listen backlog (docs/operations.md, "Connection bursts").
    await Promise.all(
      loads.map((load, p) =>
        load.ask({
          type: 'init',
          url: service.url,
          cursor,
          drivers: drivers.filter((_, i) => i % processes === p),
          connectConcurrency: 40,
        }),
      ),
    );
    ctx.log(`  ${count} drivers seeded with tokens and ${processes} load processes ready in ${Math.round(monotonicMs() - t0)} ms`);

    const idle = await measure(ctx, size, target.databaseUrl!, service, loads, `${count} drivers, no sockets`);
    const heapBefore = await service.usage(true);
    const c0 = monotonicMs();
    const tcp = tcpCounters();
    const connected = await Promise.all(loads.map((l) => l.ask({ type: 'connect' })));
    const sockets = count + size.secondDevices;
    const heapAfter = await service.usage(true);
    const connectErrors = countErrors(ctx, connected as Extract<LiveReply, { type: 'connected' }>[]);
    ctx.log(`  ${sockets} sockets in ${Math.round(monotonicMs() - c0)} ms, ${connectErrors} refused; ${describeTcp(tcp, tcpCounters())}`);
    const busy = await measure(ctx, size, target.databaseUrl!, service, loads, `${count} drivers, ${sockets} sockets`);
    await Promise.all(loads.map((l) => l.ask({ type: 'disconnect' })));
    return {
      [`pushes_per_s_${count}`]: busy.pushesPerSecond,
      [`push_p50_ms_${count}`]: busy.p50,
      [`push_p99_ms_${count}`]: busy.p99,
      [`push_p99_ms_service_${count}`]: busy.serviceP99,
      [`push_over_50ms_pct_service_${count}`]: busy.serviceOver50Pct,
      [`fanout_p99_ms_${count}`]: busy.fanoutP99,
      [`fanout_receipts_${count}`]: busy.fanoutReceipts,
      [`cpu_pct_${count}`]: busy.cpuPct,
      [`cpu_pct_nosockets_${count}`]: idle.cpuPct,
      [`push_p99_ms_nosockets_${count}`]: idle.p99,
      [`errors_${count}`]: busy.errors + idle.errors + connectErrors,
      heap_kb_per_socket: round((heapAfter.heapUsedBytes - heapBefore.heapUsedBytes) / 1024 / sockets, 2),
    };
  } finally {
    for (const load of loads) load.child.kill();
    await service.stop();
    target.dispose();
  }
}

/** One run of pushes on every load process; the service's CPU and stalls are read at the measured window's edges, PostgreSQL's waits sampled in it. */
async function measure(ctx: BenchContext, size: LiveSizes, databaseUrl: string, service: Service, loads: LoadProcess[], label: string) {
  const { warmupMs, durationMs, intervalMs } = size;
  const startAt = monotonicMs() + 200;
  const window = (async () => {
    await sleep(startAt + warmupMs - monotonicMs());
    const from = await service.usage(false);
    const host = hostCpu();
    const tcp = tcpCounters();
    const waits = await sampleWaits(databaseUrl);
    const writesFrom = await service.engineWrites();
    const pushesFrom = await service.pushBuckets();
    const end = startAt + warmupMs + durationMs;
    // Prometheus scrapes a running instance, commonly every 15 s; the bench does too.
    while (end - monotonicMs() > SCRAPE_INTERVAL_MS) {
      await sleep(SCRAPE_INTERVAL_MS);
      await service.engineWrites();
    }
    await sleep(end - monotonicMs());
    const to = await service.usage(false);
    const writes = describeEngineWrites(writesFrom, await service.engineWrites());
    const served = pushesBetween(pushesFrom, await service.pushBuckets());
    const hostLine = `${describeHostCpu(host, hostCpu())}; ${describeTcp(tcp, tcpCounters())}`;
    const mainThread = timesBetween(from.mainThread, to.mainThread);
    return { cpuMs: to.cpuMs - from.cpuMs, mainThread, stalls: to.stalls, host: hostLine, postgres: await waits.stop(), writes, served };
  })();
  const runs = (await Promise.all(loads.map((l) => l.ask({ type: 'run', startAt, warmupMs, durationMs, intervalMs })))) as LiveRun[];
  const inWindow = await window;
  const cpuPct = round((inWindow.cpuMs / durationMs) * 100);
  const pushes = runs.flatMap((r) => r.pushLatencies);
  const fanout = runs.flatMap((r) => r.fanoutLatencies);
  const errors = countErrors(ctx, runs);
  const figures = {
    pushesPerSecond: round(pushes.length / (durationMs / 1000)),
    p50: round(percentile(pushes, 50)),
    p99: round(percentile(pushes, 99)),
    fanoutP99: round(percentile(fanout, 99)),
    fanoutReceipts: fanout.length,
    // -1: the service measured no pushes (a version without the histogram).
    serviceP99: inWindow.served?.p99Ms ?? -1,
    serviceOver50Pct: inWindow.served?.over50MsPct ?? -1,
    cpuPct,
    errors,
  };
  const loadCpu = round((runs.reduce((n, r) => n + r.cpuMs, 0) / durationMs) * 100);
  ctx.log(
    `  ${label}: ${figures.pushesPerSecond} pushes/s, p50 ${figures.p50} ms, p99 ${figures.p99} ms, ` +
      `fan-out p99 ${figures.fanoutP99} ms (${fanout.length} receipts), service CPU ${cpuPct} %, load CPU ${loadCpu} %, ${errors} errors`,
  );
  if (inWindow.served)
    ctx.log(
      `    as the service measured them: ${inWindow.served.count} pushes, p99 ${inWindow.served.p99Ms} ms, ` +
        `${inWindow.served.over50MsPct} % over 50 ms`,
    );
  const loadStalls = { stalls: runs.flatMap((r) => r.stalls.stalls), collections: runs.flatMap((r) => r.stalls.collections) };
  const slow = runs.flatMap((r) => r.slowPushes);
  ctx.log(`    ${inWindow.host}; service: ${describeStalls(inWindow.stalls)}; load processes: ${describeStalls(loadStalls)}`);
  const { waits, transactions, cpuMs: postgresMs } = inWindow.postgres;
  ctx.log(`    PostgreSQL backends on average: ${waits.map(([what, n]) => `${n} ${what}`).join(', ')}`);
  const perPush = (n: number) => round(n / Math.max(1, pushes.length), 2);
  ctx.log(
    `    per push: service ${perPush(inWindow.cpuMs)} ms CPU; PostgreSQL ${perPush(transactions)} transactions, ` +
      `${postgresMs === undefined ? 'CPU not on this host' : `${perPush(postgresMs)} ms CPU`}`,
  );
  ctx.log(`    main threads: ${describeMainThreads(inWindow.mainThread, runs, durationMs)}`);
  ctx.log(`    engine: ${inWindow.writes}`);
  ctx.log(
    `    ${slow.length} pushes over ${SLOW_PUSH_MS} ms, ${overlapping(slow, inWindow.stalls)} of them during a stall of the service, ` +
      `${overlapping(slow, loadStalls)} during a stall of a load process`,
  );
  return figures;
}

/**
 * How much of the window the service's event loop ran and waited for a CPU while it could run,
 * and a load process's on average: together, how close the thread is to full.
 */
function describeMainThreads(service: ThreadTimes | undefined, runs: LiveRun[], durationMs: number): string {
  const loads = runs.map((r) => r.mainThread);
  if (!service || loads.some((times) => !times)) return 'their times are unknown on this host';
  const pct = (ms: number) => `${round((ms / durationMs) * 100)} %`;
  const average = (pick: (times: ThreadTimes) => number) => loads.reduce((n, times) => n + pick(times!), 0) / loads.length;
  return (
    `the service's ran ${pct(service.runMs)} of the time and waited for a CPU ${pct(service.waitMs)}; ` +
    `a load process's ${pct(average((t) => t.runMs))} and ${pct(average((t) => t.waitMs))}`
  );
}

function countErrors(ctx: BenchContext, replies: { errors: Record<string, number>; examples: string[] }[]): number {
  let total = 0;
  for (const reply of replies) {
    total += Object.values(reply.errors).reduce((a, b) => a + b, 0);
    for (const example of reply.examples) ctx.problems.push(`live: ${example}`);
  }
  if (total > 0) ctx.log(`  errors: ${JSON.stringify(replies.map((r) => r.errors))}; ${ctx.problems.slice(-3).join('; ')}`);
  return total;
}

/** Accounts, today's tours (one delivery of two open lines each) in a few statements, and a token each from the service's dev key. */
async function seed(target: Target, url: string, count: number, secondDevices: number): Promise<LiveDriver[]> {
  const pool = new pg.Pool({ connectionString: target.databaseUrl, max: 1 });
  try {
    const db = drizzle({ client: pool }) as unknown as Db;
    // Only the columns every version of the schema has had (a before/after pair shares this seed).
    const first = FIRST_DRIVER;
    const last = FIRST_DRIVER + count - 1;
    await db.transaction(async (tx) => {
      await tx.execute(
        sql`INSERT INTO accounts (personalnummer, name) SELECT n, 'Fahrer ' || n FROM generate_series(${first}::bigint, ${last}::bigint) AS n`,
      );
      await tx.execute(
        sql`INSERT INTO customers (erp_customer_id, name, address) VALUES (900001, 'Gasthaus Krone', ${JSON.stringify(sampleAddress())}::jsonb)`,
      );
      await tx.execute(
        sql`INSERT INTO articles (article_number, name, scannable) VALUES ('LIVE-1', 'Kiste Wasser', true), ('LIVE-2', 'Kiste Saft', true)`,
      );
      await tx.execute(
        sql`INSERT INTO tours (account_id, tour_date, name) SELECT n, ${TODAY}::date, 'Tour Nord' FROM generate_series(${first}::bigint, ${last}::bigint) AS n`,
      );
      await tx.execute(sql`INSERT INTO deliveries (tour_id, belegart_id, belegnummer, customer_id, delivery_address, sort_order)
        SELECT t.id, 1, 'LIVE-' || t.account_id, c.id, c.address, 1 FROM tours t CROSS JOIN customers c WHERE c.erp_customer_id = 900001`);
      // Lines that take scans for as long as the run lasts.
      await tx.execute(sql`INSERT INTO delivery_items (delivery_id, line_number, article_id, required_quantity, scanned_quantity, state, unit, unit_price_cents)
        SELECT d.id, a.line, a.id, 1000000, 0, 'InProgress', 'Stk', 1000 FROM deliveries d
        CROSS JOIN (SELECT id, 10 * row_number() OVER (ORDER BY article_number) AS line FROM articles WHERE article_number LIKE 'LIVE-%') AS a`);
      // Yesterday's scans: a service that has run before holds days of event ids (the deduplication
      // window). On empty tables the engine's generic plans would scan them, and keep scanning as
      // they grow faster than autovacuum renews their statistics (measured in d676c7a).
      await tx.execute(sql`WITH e AS (
          SELECT gen_random_uuid() AS id, t.account_id, d.id AS delivery_id, i.id AS item_id, now() - interval '1 day' AS at
          FROM tours t JOIN deliveries d ON d.tour_id = t.id JOIN delivery_items i ON i.delivery_id = d.id CROSS JOIN generate_series(1, ${EARLIER_SCANS_PER_LINE})),
        p AS (INSERT INTO processed_events (event_id, type, client_id, account_id, delivery_id, occurred_at, received_at)
          SELECT id, 'scan', 'live-' || account_id, account_id, delivery_id, at, at FROM e)
        INSERT INTO scan_audit (client_scan_id, delivery_id, delivery_item_id, action, scanned_quantity_after, credited_quantity_after,
          state_after, account_id, occurred_at, received_at)
        SELECT id, delivery_id, item_id, 'scan', 0, 0, 'InProgress', account_id, at, at FROM e`);
    });
    await db.execute(sql`ANALYZE`);
    const rows = await db.execute<{ account_id: string; delivery_id: string; items: string[] }>(sql`
      SELECT t.account_id::text, d.id AS delivery_id, array_agg(i.id ORDER BY i.line_number) AS items
      FROM tours t JOIN deliveries d ON d.tour_id = t.id JOIN delivery_items i ON i.delivery_id = d.id
      WHERE t.tour_date = ${TODAY}::date GROUP BY t.account_id, d.id ORDER BY t.account_id`);
    const config = loadConfig(target.env);
    const idp = await createDevIdentityProvider(config.auth, target.dataDir);
    const every = Math.max(1, Math.floor(count / secondDevices));
    return Promise.all(
      rows.rows.map(async (row, i) => ({
        personalnummer: Number(row.account_id),
        token: (await idp.mint(`${url}/dev/oidc`, Number(row.account_id))).accessToken,
        deliveryId: row.delivery_id,
        items: row.items,
        secondDevice: i % every === 0 && i / every < secondDevices,
      })),
    );
  } finally {
    await pool.end();
  }
}

interface Service {
  url: string;
  usage(gc: boolean): Promise<ServiceUsage>;
  engineWrites(): Promise<EngineWrites | undefined>;
  pushBuckets(): Promise<PushBuckets>;
  stop(): Promise<void>;
}

/** `server/main.ts` of the checkout, as `npm start` runs it (with its Node options: each version runs as it starts), with a line to ask for its CPU and heap. */
async function startService(target: Target, options: LiveOptions): Promise<Service> {
  const port = await freePort();
  // Its metrics, as an operator runs it: the engine's write timings come from there.
  const metricsPort = await freePort();
  const profile = options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.profileDir}`] : [];
  const checkout = options.serviceDir ?? thisCheckout;
  const child = fork(here('./liveService.ts'), [], {
    cwd: checkout,
    execArgv: ['--import', 'tsx', '--expose-gc', ...scriptOptions(checkout, 'start'), ...profile],
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...target.env, PORT: String(port), METRICS_PORT: String(metricsPort) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const started = monotonicMs();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode} before answering`);
    const reply = await request('GET', `${url}/health`).catch(() => undefined);
    if (reply?.status === 200) break;
    if (monotonicMs() - started > 60_000) throw new Error('no 200 from /health within 60 s');
    await sleep(50);
  }
  let asking = Promise.resolve<unknown>(undefined);
  return {
    url,
    usage: (gc) => {
      const answer = asking.then(() => ask<ServiceUsage>(child, { usage: true, gc }));
      asking = answer;
      return answer;
    },
    engineWrites: () => readEngineWrites(`http://127.0.0.1:${metricsPort}/metrics`),
    pushBuckets: () => readPushBuckets(`http://127.0.0.1:${metricsPort}/metrics`),
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

interface LoadProcess {
  child: ChildProcess;
  ask(command: LiveCommand): Promise<LiveReply>;
}

function startLoad(): LoadProcess {
  const child = fork(here('./liveLoad.ts'), [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  return {
    child,
    ask: (command) => ask<LiveReply>(child, command),
  };
}

/** Sends a message to a child process and answers its reply; fails if the child exits first. */
function ask<T>(child: ChildProcess, message: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const gone = (code: number | null) => reject(new Error(`a bench process exited with ${code} before answering`));
    child.once('exit', gone);
    child.once('message', (reply: T) => {
      child.off('exit', gone);
      resolve(reply);
    });
    child.send(message as object);
  });
}
