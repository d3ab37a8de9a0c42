/**
 * npm run bench [-- --only push,fanout] [--db postgres|pglite] [--tiny (sizes for checking the scenarios, not for figures)]
 *   [--only history --size month|year (default year; history runs only when named, on PostgreSQL unless --db says pglite)]
 *   [--phase load|measure with HISTORY_DATABASE_URL: only load that database, or only measure it loaded so]
 *   [--device-reports (every push of the push scenario carries a device health report)]
 *   [--only live --drivers 10000 (default 1000,5000,10000,15000) --service-dir <checkout> --cpu-prof-dir <dir>; PostgreSQL only]
 *   [--only upgrade (the previous release to this checkout under load; PostgreSQL only)]
 *   [--only upgrade --size month|year with HISTORY_DATABASE_URL (loaded by the previous release): on a copy of that
 *    database, its figures named <metric>_<size>; --in-place: on that database itself (one-way: only on a copy)]
 *   [--only clients (one driver day through Tourline's SDK, TanStack's offline-transactions and PowerSync's upload queue)]
 * Runs the scenarios on PostgreSQL (embedded, durable settings, or DATABASE_URL) and on PGlite,
 * prints a table and writes bench-results.json ({ database: { scenario: { metric: number } } }).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { startPostgres, type PostgresCluster } from './postgres.js';
import type { BenchContext, Metrics, Results } from './context.js';
import { importScenario } from './erpImport.js';
import { fanout } from './fanout.js';
import { fullSizes, tinySizes } from './sizes.js';
import { startup } from './startup.js';
import { printTable } from './table.js';
import { missedTargets } from './targets.js';
import { tourRead } from './tourRead.js';
import { writeScenarios } from './writes.js';
import { fullLiveSizes, live, tinyLiveSizes } from './live.js';
import { history, type HistoryPhase, type HistorySizeName } from './history.js';
import { fullSdkSizes, sdkScenario, tinySdkSizes } from './sdk.js';
import { clients, fullClientsSizes, tinyClientsSizes } from './clients.js';
import { round } from './stats.js';
import { fullUpgradeSizes, tinyUpgradeSizes, upgrade, upgradeOnCopy } from './upgrade.js';
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
  'clients',
] as const;
/** Scenarios that need no database; their figures are kept under `client`. */
const clientScenarios = new Set<string>(['sdk']);
// Loading a year takes many minutes, live holds the machine for as long, upgrade checks out and
// starts two releases, clients compares with other products: they run only when named.
const byDefault = scenarios.filter((s) => !['history', 'live', 'upgrade', 'clients'].includes(s));
type Scenario = (typeof scenarios)[number];

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    db: { type: 'string' },
    out: { type: 'string', default: 'bench-results.json' },
    tiny: { type: 'boolean', default: false },
    size: { type: 'string' },
    phase: { type: 'string', default: 'all' },
    drivers: { type: 'string' },
    'service-dir': { type: 'string' },
    'cpu-prof-dir': { type: 'string' },
    'device-reports': { type: 'boolean', default: false },
    'in-place': { type: 'boolean', default: false },
  },
});
const only = new Set(
  (values.only ?? byDefault.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);
const historySize = (values.size ?? 'year') as HistorySizeName;
if (historySize !== 'month' && historySize !== 'year') throw new Error(`unknown size ${values.size}; month or year`);
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
    if (only.has('clients'))
      await step('clients', async () => {
        results.clients = await clients(ctx, values.tiny ? tinyClientsSizes : fullClientsSizes);
        if (ctx.problems.length > 0) throw new Error(`not exactly once: ${ctx.problems.join('; ')}`);
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
        const sizes = values.tiny ? tinyUpgradeSizes : fullUpgradeSizes;
        const loaded = process.env.HISTORY_DATABASE_URL;
        if (!values.size)
          results.upgrade = { ...results.upgrade, ...(await upgrade(await cluster!.createDatabase('upgrade'), sizes, log)) };
        else {
          if (!loaded) throw new Error('upgrade --size needs HISTORY_DATABASE_URL, a database the previous release loaded with history');
          const found = values['in-place'] ? await upgrade(loaded, sizes, log) : await upgradeOnCopy(loaded, sizes, log);
          // Beside the small run's figures, as history keeps its sizes.
          for (const [metric, value] of Object.entries(found))
            results.upgrade = { ...results.upgrade, [`${metric}_${values.size}`]: value };
        }
      });
    if (only.has('history') && (kind === 'postgres' || values.db)) {
      await step(`history (${historySize})`, async () => {
        // The month's and the year's figures may come from separate runs (--phase measure): kept side by side.
        const found = await history(ctx, historySize, values.phase as HistoryPhase, process.env.HISTORY_DATABASE_URL);
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
printTable(all, scenarios, log);
log(
  `\n${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${Math.round((Date.now() - started) / 1000)} s; written to ${values.out}`,
);
const missed = missedTargets(all.postgres);
if (missed.length) log(`targets missed on PostgreSQL: ${missed.map(([s, m]) => `${s}.${m}`).join(', ')}`);
process.exit(failed ? 1 : 0);
