import { describe, expect, it } from 'vitest';
import { history } from '../bench/history.js';
import type { BenchContext } from '../bench/context.js';
import { importScenario } from '../bench/erpImport.js';
import { fanout } from '../bench/fanout.js';
import { tinySizes } from '../bench/sizes.js';
import { tourRead } from '../bench/tourRead.js';
import { writeScenarios } from '../bench/writes.js';
import { clientNames, clients } from '../bench/clients.js';
import { live, tinyLiveSizes } from '../bench/live.js';
import { newTarget } from '../bench/target.js';
import { wire } from '../bench/wire.js';
import { createPostgresDatabase, databaseKinds } from '../helpers/databases.js';

// The bench scenarios at a tiny size: what they check must hold; their timings mean nothing here.
describe.each(databaseKinds)('bench scenarios on %s', (kind) => {
  const context = (): BenchContext => ({
    kind,
    sizes: tinySizes,
    log: () => undefined,
    problems: [],
    newTarget: (name) => newTarget(kind, name, () => createPostgresDatabase()),
  });

  it('applies every scan the drivers push and the plain-SQL floor writes the same batches', async () => {
    const ctx = context();
    const results = await writeScenarios(ctx, { push: true, floor: true, pushSmall: false });
    expect(ctx.problems).toEqual([]);
    expect(results.push.events_per_s).toBeGreaterThan(0);
    // Timed over the window the load process marks; missing if its marks never arrive.
    expect(results.push.service_cpu_ms).toBeGreaterThan(0);
    expect(results.push.load_cpu_ms).toBeGreaterThan(0);
    expect(results.floor.events_per_s).toBeGreaterThan(0);
  }, 90_000);

  it('imports the same ERP day a second time without writing a single change record', async () => {
    const ctx = context();
    const results = await importScenario(ctx);
    expect(results.again_changes).toBe(0);
    expect(ctx.problems).toEqual([]);
  }, 90_000);

  it('delivers every committed change to every live client of its account', async () => {
    const ctx = context();
    await fanout(ctx);
    expect(ctx.problems).toEqual([]);
  }, 90_000);

  it('reads a tour with notes and contacts in a fixed number of queries whatever its size', async () => {
    const small = context();
    const larger: BenchContext = {
      ...context(),
      sizes: { ...tinySizes, tourRead: { ...tinySizes.tourRead, deliveries: 6, positions: 5 } },
    };
    const [a, b] = [await tourRead(small), await tourRead(larger)];
    expect(small.problems).toEqual([]);
    expect(b.queries).toBe(a.queries);
  }, 90_000);

  it('measures the tour and a day of changes on the wire: compressed smaller than plain, the same changes over pull and WebSocket', async () => {
    const ctx = context();
    const figures = await wire(ctx);
    expect(figures.day_changes).toBeGreaterThan(0);
    for (const what of ['tour_bytes', 'day_pull_bytes']) {
      expect(figures[`${what}_gzip`], what).toBeLessThan(figures[`${what}_plain`] / 2);
      expect(figures[`${what}_br`], what).toBeLessThan(figures[`${what}_plain`] / 2);
    }
    expect(figures.day_ws_bytes_deflate).toBeLessThan(figures.day_ws_bytes_plain / 2);
    expect(figures.tour_cpu_us_br).toBeGreaterThan(0);
  }, 90_000);

  it('loads a history and measures every read, the poll, push and import on it, at a month and at a year', async () => {
    const ctx = context();
    const { history: figures } = await history(ctx, 'year');
    // Among them: every completed delivery answered once by the unparameterised list, no follow-up due, no push refused.
    expect(ctx.problems).toEqual([]);
    const reads = [
      'completed_day',
      'completed_all',
      'delivered_day',
      'delivered_all',
      'reviews',
      'belege',
      'positions_modified',
      'writeback_poll',
      'me_tours',
      'tour_read',
    ];
    for (const size of ['month', 'year']) {
      for (const read of reads) expect(figures[`${read}_${size}_p50_ms`], `${read} ${size}`).toBeGreaterThan(0);
    }
    for (const label of ['empty', 'year']) {
      expect(figures[`push_events_per_s_${label}`]).toBeGreaterThan(0);
      expect(figures[`import_s_${label}`]).toBeGreaterThan(0);
    }
    expect(figures.db_mb_year).toBeGreaterThan(figures.db_mb_month);
    expect(figures.completed_all_rss_growth_mb).toBeGreaterThanOrEqual(0);
  }, 180_000);
});

// The service in a process of its own on PostgreSQL, as the scenario measures it (PGlite lives in one process).
describe('live bench scenario on postgres', () => {
  it('keeps every socket, applies every push and brings every pushed change to the second device of its account', async () => {
    const lines: string[] = [];
    const ctx: BenchContext = {
      kind: 'postgres',
      sizes: tinySizes,
      log: (line) => lines.push(line),
      problems: [],
      newTarget: (name) => newTarget('postgres', name, () => createPostgresDatabase()),
    };
    const figures = await live(ctx, tinyLiveSizes);
    expect(ctx.problems).toEqual([]);
    expect(figures.errors_50).toBe(0);
    expect(figures.pushes_per_s_50).toBeGreaterThan(0);
    expect(figures.fanout_receipts_50).toBeGreaterThan(0);
    // Read from the service process over the measured windows; missing or zero if its answers never arrive.
    expect(figures.cpu_pct_50).toBeGreaterThan(0);
    expect(figures.cpu_pct_nosockets_50).toBeGreaterThan(0);
    // Each window says how long its pushes waited for the engine's writer, from the service's metrics.
    const engine = lines.filter((line) => line.trim().startsWith('engine:'));
    expect(engine).toHaveLength(2);
    for (const line of engine) expect(line).toMatch(/engine: [1-9]\d* writes waited for the writer [\d.]+ ms on average/);
  }, 120_000);
});

// The smallest day that holds every kind of action (a scan, a note, a credit, a photo, a completion), on one database: the peers' clients are the same on both.
describe('clients bench scenario on postgres', () => {
  it('sends the day through each of the three clients and the service applies every action exactly once', async () => {
    const problems: string[] = [];
    const figures = await clients(
      { log: () => undefined, problems, newTarget: (name) => newTarget('postgres', name, () => createPostgresDatabase()) },
      { actions: 5, deliveries: 1, linesPerDelivery: 1 },
    );
    expect(problems).toEqual([]);
    for (const name of clientNames) {
      expect(figures[`${name}_exactly_once`], name).toBe(1);
      expect(figures[`${name}_requests`], name).toBeGreaterThan(0);
      expect(figures[`${name}_restart_to_first_send_ms`], name).toBeGreaterThanOrEqual(0);
    }
  }, 120_000);
});
