import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import type { Db } from '../../server/db/client.js';
import type { ErpGateway } from '../../server/integrations/erp/gateway.js';
import { runDueFollowUps } from '../../server/engine/completion/followUp.js';
import { eventWindowStart, pruneProcessedEvents } from '../../server/jobs/eventRetention.js';
import type { RunningServer } from '../../server/server.js';
import { addDays, berlinDate } from '../../shared/rules/calendar.js';
import { largeErpDay, type ErpSize } from './erpData.js';
import { FIRST_DRIVER, loadHistory, loadMasterData, loadToday, workingDaysBefore, type CompanySize } from './historyLoad.js';
import { request, requestJson } from './http.js';
import type { BatchShape } from './jobs.js';
import { seedDrivers } from './seed.js';
import type { StreamRead } from './streamReader.js';
import { latencies, monotonicMs, round } from './stats.js';
import { BENCH_ADMIN_KEY, newTarget, startBenchServer } from './target.js';
import { problem, runLoad, type BenchContext, type Metrics, type Results } from './context.js';

export type HistorySizeName = 'month' | 'year';

export interface HistorySizes {
  company: CompanySize;
  /** Working days of history per size. */
  days: Record<HistorySizeName, number>;
  /** Samples per read (after one unmeasured), and of the unparameterised completed-deliveries list. */
  iterations: number;
  allIterations: number;
  push: { drivers: number; deliveries: number; positions: number; durationMs: number; warmupMs: number } & BatchShape;
  import: ErpSize;
}

const ddmmyyyy = (day: string) => day.split('-').reverse().join('-');

/** The bench's ERP, which renames one article each day: the import then tells the other drivers (its fan-out). */
export function renamingErp(size: ErpSize): ErpGateway {
  return {
    fetchTours: async (date) => {
      const tours = largeErpDay(date, size);
      const renamed = tours[0].deliveries[0].positions[0].article.articleNumber;
      for (const position of tours.flatMap((t) => t.deliveries.flatMap((d) => d.positions))) {
        if (position.article.articleNumber === renamed)
          position.article = { ...position.article, name: `${position.article.name} (${date})` };
      }
      return { tours, refused: [] };
    },
    pushCompletion: async () => undefined,
    pushCancellation: async () => undefined,
  };
}

async function timeRuns(iterations: number, run: () => Promise<void>): Promise<number[]> {
  await run();
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t0 = monotonicMs();
    await run();
    samples.push(monotonicMs() - t0);
  }
  return samples;
}

const readerScript = fileURLToPath(new URL('./streamReader.ts', import.meta.url));

/** The list read by a process of its own (streamReader.ts). */
function readInChild(url: string): Promise<StreamRead> {
  const child = fork(readerScript, [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  child.send(url);
  return new Promise((resolve, reject) => {
    child.once('message', (message: { ok: boolean; result?: StreamRead; error?: string }) =>
      message.ok ? resolve(message.result!) : reject(new Error(`stream reader: ${message.error}`)),
    );
    child.once('exit', (code) => reject(new Error(`stream reader exited with ${code} before answering`)));
  });
}

/**
 * The unparameterised completed-deliveries list, read as a stream by another process: how long,
 * how many entries, and how much this process, the service alone, grew meanwhile (resident
 * memory sampled every 5 ms, with the split of the largest growth: JavaScript heap, memory
 * outside it, of which array buffers).
 */
async function readCompletedAll(url: string) {
  const before = process.memoryUsage();
  const peak = { rss: before.rss, heapUsed: before.heapUsed, external: before.external, arrayBuffers: before.arrayBuffers };
  const sampler = setInterval(() => {
    const now = process.memoryUsage();
    for (const key of Object.keys(peak) as (keyof typeof peak)[]) peak[key] = Math.max(peak[key], now[key]);
  }, 5);
  try {
    const read = await readInChild(url);
    const mb = (key: keyof typeof peak) => (peak[key] - before[key]) / 2 ** 20;
    return {
      ...read,
      rssGrowthMb: mb('rss'),
      heapGrowthMb: mb('heapUsed'),
      externalGrowthMb: mb('external'),
      buffersGrowthMb: mb('arrayBuffers'),
    };
  } finally {
    clearInterval(sampler);
  }
}

interface Reader {
  token: string;
  tourId: string;
}

/** The driver's and the pushing drivers' figures: `me_tours`, `tour_read`, push throughput, import time. */
export async function driverFigures(
  ctx: BenchContext,
  server: RunningServer,
  label: string,
  reader: Reader,
  pushers: Awaited<ReturnType<typeof seedDrivers>>,
  importDate: string,
): Promise<Metrics> {
  const size = ctx.sizes.history;
  const out: Metrics = {};
  const get = (path: string) => async () => {
    const reply = await request('GET', `${server.url}${path}`, { token: reader.token });
    if (reply.status !== 200) throw new Error(`${path}: ${reply.status} ${reply.text.slice(0, 200)}`);
  };
  const put = (name: string, samples: number[]) => {
    const { p50_ms, p99_ms } = latencies(samples);
    Object.assign(out, { [`${name}_${label}_p50_ms`]: p50_ms, [`${name}_${label}_p99_ms`]: p99_ms });
  };
  put('me_tours', await timeRuns(size.iterations, get(`/me/tours?date=${berlinDate(new Date())}`)));
  put('tour_read', await timeRuns(size.iterations, get(`/tours/${reader.tourId}`)));
  await server.ctx.database.db.execute(sql`CHECKPOINT`);
  const { deliveriesPerBatch, eventsPerDelivery, durationMs, warmupMs } = size.push;
  const measured = await runLoad({
    kind: 'push',
    url: server.url,
    drivers: pushers,
    thinkMs: 0,
    deliveriesPerBatch,
    eventsPerDelivery,
    durationMs,
    warmupMs,
  });
  for (const error of measured.errors) problem(ctx, `history push (${label}): ${error}`);
  out[`push_events_per_s_${label}`] = Math.round(measured.count / (measured.elapsedMs / 1000));
  const t0 = monotonicMs();
  const summary = await requestJson('POST', `${server.url}/admin/import-erp?date=${importDate}`, { admin: BENCH_ADMIN_KEY });
  out[`import_s_${label}`] = round((monotonicMs() - t0) / 1000, 2);
  if (!summary.success) problem(ctx, `history import (${label}): ${JSON.stringify(summary).slice(0, 300)}`);
  return out;
}

/** The back office's reads and the write-back poll at one size of history. */
export async function backOfficeFigures(
  ctx: BenchContext,
  server: RunningServer,
  label: string,
  lastDay: string,
  expected: number,
): Promise<Metrics> {
  const size = ctx.sizes.history;
  const out: Metrics = {};
  // fetch, not the bench's client: the completed-deliveries list comes chunked.
  const admin = (path: string) => async () => {
    const reply = await fetch(`${server.url}${path}`, { headers: { 'x-admin-api-key': BENCH_ADMIN_KEY } });
    const text = await reply.text();
    if (reply.status !== 200) throw new Error(`${path}: ${reply.status} ${text.slice(0, 200)}`);
  };
  const put = (name: string, samples: number[]) => {
    const { p50_ms, p99_ms } = latencies(samples);
    Object.assign(out, { [`${name}_${label}_p50_ms`]: p50_ms, [`${name}_${label}_p99_ms`]: p99_ms });
  };
  // A document from the middle of the history, one with a deviation where there is one.
  const [{ belegnummer }] = (
    await server.ctx.database.db.execute<{ belegnummer: string }>(sql`
    SELECT d.belegnummer FROM deliveries d WHERE d.state = 'completed' ORDER BY (d.credit_amount_cents IS NULL), d.completed_at LIMIT 1`)
  ).rows;
  const day = ddmmyyyy(lastDay);
  put('completed_day', await timeRuns(size.iterations, admin(`/admin/completed-deliveries?day=${day}`)));
  put('delivered_day', await timeRuns(size.iterations, admin(`/admin/delivered-belegnummern?day=${day}`)));
  put('delivered_all', await timeRuns(size.iterations, admin('/admin/delivered-belegnummern')));
  put('reviews', await timeRuns(size.iterations, admin('/admin/reviews')));
  put('belege', await timeRuns(size.iterations, admin(`/admin/belege/${encodeURIComponent(belegnummer)}`)));
  put('positions_modified', await timeRuns(size.iterations, admin(`/admin/belege/${encodeURIComponent(belegnummer)}/positions-modified`)));
  put(
    'writeback_poll',
    await timeRuns(size.iterations, async () => {
      const ran = await runDueFollowUps(server.ctx);
      if (ran > 0) problem(ctx, `write-back poll (${label}): ${ran} follow-ups were due`);
    }),
  );
  const all: number[] = [];
  let growth = { rss: 0, heap: 0, external: 0, buffers: 0 };
  for (let i = 0; i <= size.allIterations; i++) {
    const read = await readCompletedAll(server.url);
    if (read.count !== expected || read.deliveries !== expected) {
      problem(ctx, `completed-deliveries (${label}): count ${read.count}, ${read.deliveries} entries, expected ${expected}`);
    }
    if (i > 0) all.push(read.ms);
    // The first read's growth includes what the service allocates once (code, pools), not what sending costs.
    if (i > 0 && read.rssGrowthMb > growth.rss)
      growth = { rss: read.rssGrowthMb, heap: read.heapGrowthMb, external: read.externalGrowthMb, buffers: read.buffersGrowthMb };
  }
  put('completed_all', all);
  out[`completed_all_rss_growth_mb_${label}`] = round(growth.rss);
  out[`completed_all_heap_growth_mb_${label}`] = round(growth.heap);
  out[`completed_all_external_growth_mb_${label}`] = round(growth.external);
  out[`completed_all_buffers_growth_mb_${label}`] = round(growth.buffers);
  return out;
}

async function databaseSizes(db: Db, label: string): Promise<{ total: Metrics; tables: Metrics }> {
  const mb = (bytes: string) => round(Number(bytes) / 2 ** 20);
  const [{ total }] = (await db.execute<{ total: string }>(sql`SELECT pg_database_size(current_database())::text AS total`)).rows;
  const tables = (
    await db.execute<{ name: string; bytes: string }>(sql`
    SELECT c.relname AS name, pg_total_relation_size(c.oid)::text AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind = 'r' AND n.nspname = 'public' ORDER BY pg_total_relation_size(c.oid) DESC`)
  ).rows;
  return {
    total: { [`db_mb_${label}`]: mb(total) },
    tables: Object.fromEntries(tables.filter((t) => Number(t.bytes) >= 2 ** 20).map((t) => [`${t.name}_mb_${label}`, mb(t.bytes)])),
  };
}

/** Master data (unless `loaded`), today's tours, the pushing drivers and the reading driver. */
async function prepare(server: RunningServer, size: HistorySizes, today: string, loaded: boolean) {
  const db = server.ctx.database.db;
  if (!loaded) {
    await loadMasterData(db, size.company);
    await loadToday(db, size.company, today);
  }
  const pushers = await seedDrivers(server, {
    first: 50_001,
    count: size.push.drivers,
    deliveries: size.push.deliveries,
    positions: size.push.positions,
    tourDate: today,
  });
  const { accessToken: token } = await requestJson('POST', `${server.url}/dev/token`, {
    admin: BENCH_ADMIN_KEY,
    body: { personalnummer: FIRST_DRIVER },
  });
  const [{ id: tourId }] = (
    await db.execute<{ id: string }>(sql`SELECT id FROM tours WHERE account_id = ${FIRST_DRIVER} AND tour_date = ${today}`)
  ).rows;
  await db.execute(sql`VACUUM ANALYZE tours, deliveries, delivery_items, accounts, cars`);
  return { pushers, reader: { token, tourId } };
}

/** The figures of the database that holds only today. */
async function emptyFigures(ctx: BenchContext, today: string): Promise<Metrics> {
  const target = await ctx.newTarget('history_empty');
  const server = await startBenchServer(target, { erp: renamingErp(ctx.sizes.history.import) });
  try {
    const { pushers, reader } = await prepare(server, ctx.sizes.history, today, false);
    return await driverFigures(ctx, server, 'empty', reader, pushers, addDays(today, 10));
  } finally {
    await server.close();
    target.dispose();
  }
}

/**
 * What a service that ran the whole time has done every day: forgotten the event ids past the
 * deduplication window. The load writes the year's, and a start on them would spend the
 * measured minutes deleting millions of rows beside the requests measured.
 */
async function pruneAsEveryDay(server: RunningServer): Promise<number> {
  const db = server.ctx.database.db;
  const forgotten = await pruneProcessedEvents(db, eventWindowStart(server.ctx.config.processedEventRetentionDays));
  await db.execute(sql`VACUUM ANALYZE processed_events`);
  return forgotten;
}

/** How `history` runs: load and measure (all), only load into a kept database, or only measure one loaded so. */
export type HistoryPhase = 'all' | 'load' | 'measure';

/**
 * A company's history, loaded with set-based SQL, at a month and (when `upTo` is year) at a
 * year: the back office's reads, the write-back poll, a driver's reads, push throughput and
 * the import, the last two also on a database that holds only today. With a kept database
 * (`keptUrl`), `load` only loads it with the history of `upTo` (one size, no reads) and
 * `measure` measures one loaded so, with the empty database's figures in the same minutes:
 * a long load can run beside other work and the measurement alone in a quiet one.
 */
export async function history(ctx: BenchContext, upTo: HistorySizeName, phase: HistoryPhase = 'all', keptUrl?: string): Promise<Results> {
  const size = ctx.sizes.history;
  if (phase !== 'all' && !keptUrl) throw new Error(`history --phase ${phase} needs HISTORY_DATABASE_URL, the database to keep`);
  const target = keptUrl ? await newTarget(ctx.kind, 'history', async () => keptUrl) : await ctx.newTarget('history');
  // The loader's statements (a chunk of days, VACUUM ANALYZE of a year) run for minutes on the
  // service's own connections, past the 5 s that guard its requests.
  const server = await startBenchServer(target, {
    erp: renamingErp(size.import),
    env: { DATABASE_STATEMENT_TIMEOUT_MS: String(3_600_000) },
  });
  try {
    const db = server.ctx.database.db;
    const today = berlinDate(new Date());
    const days = workingDaysBefore(today, size.days[upTo]);
    const figures: Metrics = {};
    const tables: Metrics = {};
    const load = async (label: HistorySizeName, dates: string[]) => {
      const t0 = monotonicMs();
      await loadHistory(db, size.company, {
        dates,
        lastDay: days.at(-1)!,
        changeLogFrom: addDays(today, -30),
        onChunk: (done, total) => ctx.log(`  ${label}: ${done}/${total} days loaded, ${Math.round((monotonicMs() - t0) / 1000)} s`),
      });
      figures[`load_s_${label}`] = round((monotonicMs() - t0) / 1000);
    };
    const measure = async (label: HistorySizeName, index: number, prepared: Awaited<ReturnType<typeof prepare>>) => {
      const want = size.days[label];
      ctx.log(`  ${label}: ${await pruneAsEveryDay(server)} event ids past the window forgotten`);
      ctx.log(`  ${label}: reads`);
      Object.assign(
        figures,
        await backOfficeFigures(ctx, server, label, days.at(-1)!, want * size.company.drivers * size.company.deliveries),
      );
      Object.assign(figures, await driverFigures(ctx, server, label, prepared.reader, prepared.pushers, addDays(today, 11 + index)));
      const sizes = await databaseSizes(db, label);
      Object.assign(figures, sizes.total);
      Object.assign(tables, sizes.tables);
      // A year takes long to load: what is measured is shown at once.
      ctx.log(`  ${label}: ${JSON.stringify(Object.fromEntries(Object.entries(figures).filter(([key]) => key.includes(label))))}`);
    };

    if (phase === 'load') {
      await loadMasterData(db, size.company);
      await loadToday(db, size.company, today);
      await load(upTo, days);
    } else if (phase === 'measure') {
      ctx.log('  empty');
      Object.assign(figures, await emptyFigures(ctx, today));
      await measure(upTo, 0, await prepare(server, size, today, true));
    } else {
      const prepared = await prepare(server, size, today, false);
      ctx.log('  empty');
      Object.assign(figures, await driverFigures(ctx, server, 'empty', prepared.reader, prepared.pushers, addDays(today, 10)));
      const labels: HistorySizeName[] = upTo === 'year' ? ['month', 'year'] : ['month'];
      let loaded = 0;
      for (const [index, label] of labels.entries()) {
        const want = size.days[label];
        await load(label, days.slice(days.length - want, days.length - loaded));
        loaded = want;
        await measure(label, index, prepared);
      }
    }
    if (figures.completed_all_rss_growth_mb_year !== undefined)
      figures.completed_all_rss_growth_mb = figures.completed_all_rss_growth_mb_year;
    return { history: figures, history_tables: tables };
  } finally {
    await server.close();
    target.dispose();
  }
}
