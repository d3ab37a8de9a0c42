/**
 * npm run bench [-- --only push,fanout] [--db postgres|pglite] [--tiny (sizes for checking the scenarios, not for figures)]
 *   [--only history --size month|year (default year; history runs only when named, on PostgreSQL unless --db says pglite)]
 *   [--phase load|measure with HISTORY_DATABASE_URL: only load that database, or only measure it loaded so]
 *   [--device-reports (every push of the push scenario carries a device health report)]
 *   [--only live --drivers 10000 (default 1000,5000,10000,15000) --service-dir <checkout> --cpu-prof-dir <dir>; PostgreSQL only]
 *   [--only upgrade (the previous release to this checkout under load; PostgreSQL only)]
 * Runs the scenarios on PostgreSQL (embedded, durable settings, or DATABASE_URL) and on PGlite,
 * prints a table and writes bench-results.json ({ database: { scenario: { metric: number } } }).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { startPostgres, type PostgresCluster } from './postgres.js';
import {
  fanout,
  fullSizes,
  tinySizes,
  importScenario,
  startup,
  tourRead,
  writeScenarios,
  type BenchContext,
  type Metrics,
  type Results,
} from './scenarios.js';
import { fullLiveSizes, live, tinyLiveSizes } from './live.js';
import { history, type HistoryPhase, type HistorySizeName } from './history.js';
import { fullSdkSizes, sdkScenario, tinySdkSizes } from './sdk.js';
import { round } from './stats.js';
import { fullUpgradeSizes, tinyUpgradeSizes, upgrade } from './upgrade.js';
import { wire } from './wire.js';
import { newTarget, type DatabaseKind } from './target.js';

const scenarios = [
  'push',
  'push_small',
  'floor',
  'tour_read',
  'wire',
  'fanout',
  'import',
  'startup',
  'sdk',
  'history',
  'live',
  'upgrade',
] as const;
/** Scenarios that need no database; their figures are kept under `client`. */
const clientScenarios = new Set<string>(['sdk']);
// Loading a year takes many minutes, live holds the machine for as long, upgrade checks out and
// starts two releases: they run only when named.
const byDefault = scenarios.filter((s) => s !== 'history' && s !== 'live' && s !== 'upgrade');
type Scenario = (typeof scenarios)[number];

/** The targets on PostgreSQL: [scenario, metric, bound, 'min' | 'max']. */
export const targets: [Scenario, string, number, 'min' | 'max'][] = [
  ['push', 'events_per_s', 10_000, 'min'],
  ['push', 'floor_ratio', 0.5, 'min'],
  ['push_small', 'p99_ms', 50, 'max'],
  ['tour_read', 'p50_ms', 10, 'max'],
  ['fanout', 'p99_ms', 100, 'max'],
  ['import', 'first_s', 60, 'max'],
  ['import', 'again_s', 15, 'max'],
  ['import', 'again_changes', 0, 'max'],
  ['startup', 'existing_ms', 2000, 'max'],
  ...(['completed_day', 'delivered_day', 'belege', 'positions_modified'] as const).map(
    (read): [Scenario, string, number, 'min' | 'max'] => ['history', `${read}_year_p50_ms`, 20, 'max'],
  ),
  ['history', 'reviews_year_p50_ms', 50, 'max'],
  ['history', 'writeback_poll_year_p50_ms', 5, 'max'],
  ['history', 'completed_all_rss_growth_mb', 50, 'max'],
  // Within 15 % of the database that holds only today.
  ['history', 'push_year_ratio', 0.9, 'min'],
  ['history', 'import_year_ratio', 1.15, 'max'],
  ['history', 'me_tours_year_ratio', 1.15, 'max'],
  ['history', 'tour_read_year_ratio', 1.15, 'max'],
  ...[10_000, 15_000].flatMap((n): [Scenario, string, number, 'min' | 'max'][] => [
    ['live', `push_p99_ms_${n}`, 50, 'max'],
    ['live', `push_p99_ms_service_${n}`, 50, 'max'],
    ['live', `fanout_p99_ms_${n}`, 100, 'max'],
  ]),
  ...[1000, 5000, 10_000, 15_000].map((n): [Scenario, string, number, 'min' | 'max'] => ['live', `errors_${n}`, 0, 'max']),
  // The sockets held cost at most 10 points of CPU over the same pushes with none open.
  ['live', 'cpu_pct_added_10000', 10, 'max'],
  ['upgrade', 'failed_requests', 0, 'max'],
  ['upgrade', 'events_lost', 0, 'max'],
  ['upgrade', 'events_doubled', 0, 'max'],
  ['upgrade', 'old_write_stall_max_ms', 1000, 'max'],
];

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    db: { type: 'string' },
    out: { type: 'string', default: 'bench-results.json' },
    tiny: { type: 'boolean', default: false },
    size: { type: 'string', default: 'year' },
    phase: { type: 'string', default: 'all' },
    drivers: { type: 'string' },
    'service-dir': { type: 'string' },
    'cpu-prof-dir': { type: 'string' },
    'device-reports': { type: 'boolean', default: false },
  },
});
const only = new Set(
  (values.only ?? byDefault.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);
if (values.size !== 'month' && values.size !== 'year') throw new Error(`unknown size ${values.size}; month or year`);
if (!['all', 'load', 'measure'].includes(values.phase!)) throw new Error(`unknown phase ${values.phase}; all, load or measure`);
for (const name of only)
  if (!scenarios.includes(name as Scenario)) throw new Error(`unknown scenario ${name}; one of ${scenarios.join(', ')}`);
const kinds = (values.db ? values.db.split(',') : ['postgres', 'pglite']) as DatabaseKind[];
for (const kind of kinds) if (kind !== 'postgres' && kind !== 'pglite') throw new Error(`unknown database ${kind}; postgres or pglite`);

const log = (message: string) => console.log(message);
const all: Record<string, Results> = existsSync(values.out!) && values.only ? JSON.parse(readFileSync(values.out!, 'utf8')) : {};
const started = Date.now();
let cluster: PostgresCluster | undefined;
let failed = false;

try {
  if (only.has('sdk')) {
    log('[client] sdk');
    try {
      all.client = { ...all.client, sdk: await sdkScenario(values.tiny ? tinySdkSizes : fullSdkSizes) };
    } catch (error) {
      failed = true;
      log(`[client] sdk failed: ${error instanceof Error ? error.stack : String(error)}`);
    }
  }
  for (const kind of [...only].some((s) => !clientScenarios.has(s)) ? kinds : []) {
    if (kind === 'postgres') {
      cluster = await startPostgres();
      log(`postgres: ${cluster.settings}`);
    }
    const ctx: BenchContext = {
      kind,
      sizes: values.tiny ? tinySizes : fullSizes,
      newTarget: (name) => newTarget(kind, name, cluster?.createDatabase),
      log,
      deviceReports: values['device-reports'],
      problems: [],
    };
    const results: Results = all[kind] ?? {};
    all[kind] = results;
    const step = async (name: string, work: () => Promise<void>) => {
      log(`[${kind}] ${name}`);
      try {
        await work();
      } catch (error) {
        failed = true;
        log(`[${kind}] ${name} failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    };
    if (only.has('push') || only.has('floor') || only.has('push_small')) {
      await step('push, floor, push_small', async () => {
        Object.assign(
          results,
          await writeScenarios(ctx, { push: only.has('push'), floor: only.has('floor'), pushSmall: only.has('push_small') }),
        );
        if (results.push && results.floor?.events_per_s)
          results.push.floor_ratio = round(results.push.events_per_s / results.floor.events_per_s, 2);
      });
    }
    const single: [Scenario, (ctx: BenchContext) => Promise<Metrics>][] = [
      ['tour_read', tourRead],
      ['wire', wire],
      ['fanout', fanout],
      ['import', importScenario],
      ['startup', startup],
    ];
    for (const [name, scenario] of single)
      if (only.has(name))
        await step(name, async () => {
          results[name] = await scenario(ctx);
        });
    if (only.has('live') && kind === 'postgres')
      await step('live', async () => {
        const sizes = values.tiny ? tinyLiveSizes : fullLiveSizes;
        const drivers = values.drivers?.split(',').map(Number) ?? sizes.drivers;
        const options = { serviceDir: values['service-dir'], profileDir: values['cpu-prof-dir'] };
        // Merged: one size per run adds its figures to those of the others.
        results.live = { ...results.live, ...(await live(ctx, { ...sizes, drivers }, options)) };
        for (const n of drivers)
          if (results.live[`cpu_pct_${n}`] !== undefined)
            results.live[`cpu_pct_added_${n}`] = round(results.live[`cpu_pct_${n}`] - results.live[`cpu_pct_nosockets_${n}`]);
      });
    if (only.has('upgrade') && kind === 'postgres')
      await step('upgrade', async () => {
        results.upgrade = await upgrade(await cluster!.createDatabase('upgrade'), values.tiny ? tinyUpgradeSizes : fullUpgradeSizes, log);
      });
    if (only.has('history') && (kind === 'postgres' || values.db)) {
      await step(`history (${values.size})`, async () => {
        // The month's and the year's figures may come from separate runs (--phase measure): kept side by side.
        const found = await history(ctx, values.size as HistorySizeName, values.phase as HistoryPhase, process.env.HISTORY_DATABASE_URL);
        results.history = { ...results.history, ...found.history };
        results.history_tables = { ...results.history_tables, ...found.history_tables };
        const h = results.history;
        const ratio = (a: number | undefined, b: number | undefined) => (a && b ? round(a / b, 2) : undefined);
        for (const [name, value] of Object.entries({
          push_year_ratio: ratio(h.push_events_per_s_year, h.push_events_per_s_empty),
          import_year_ratio: ratio(h.import_s_year, h.import_s_empty),
          me_tours_year_ratio: ratio(h.me_tours_year_p50_ms, h.me_tours_empty_p50_ms),
          tour_read_year_ratio: ratio(h.tour_read_year_p50_ms, h.tour_read_empty_p50_ms),
        }))
          if (value !== undefined) h[name] = value;
      });
    }
    await cluster?.stop();
    cluster = undefined;
  }
} finally {
  await cluster?.stop();
}

writeFileSync(values.out!, `${JSON.stringify(all, null, 2)}\n`);
printTable(all);
log(
  `\n${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${Math.round((Date.now() - started) / 1000)} s; written to ${values.out}`,
);
const missed = targets.filter(([s, m, bound, way]) => {
  const value = all.postgres?.[s]?.[m];
  return value !== undefined && (way === 'min' ? value < bound : value > bound);
});
if (missed.length) log(`targets missed on PostgreSQL: ${missed.map(([s, m]) => `${s}.${m}`).join(', ')}`);
process.exit(failed ? 1 : 0);

function printTable(data: Record<string, Results>) {
  const dbs = Object.keys(data);
  const rows: string[][] = [['scenario', 'metric', ...dbs, 'target (postgres)']];
  for (const scenario of scenarios) {
    const metrics = new Set(dbs.flatMap((db) => Object.keys(data[db][scenario] ?? {})));
    for (const metric of metrics) {
      const target = targets.find(([s, m]) => s === scenario && m === metric);
      const value = data.postgres?.[scenario]?.[metric];
      const verdict =
        target && value !== undefined
          ? `${target[3] === 'min' ? '>=' : '<='} ${target[2]} ${(target[3] === 'min' ? value >= target[2] : value <= target[2]) ? 'ok' : 'MISSED'}`
          : '';
      rows.push([scenario, metric, ...dbs.map((db) => String(data[db][scenario]?.[metric] ?? '')), verdict]);
    }
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  log('');
  for (const [i, row] of rows.entries()) {
    log(row.map((cell, c) => (c >= 2 && c < row.length - 1 ? cell.padStart(widths[c]) : cell.padEnd(widths[c]))).join('  '));
    if (i === 0) log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
}
