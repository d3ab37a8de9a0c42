/**
 * A rolling upgrade under load (`npm run bench -- --only upgrade`): the previous release
 * (test/compat/releases.json), built from a worktree of its commit, serves drivers with sockets
 * and photos on PostgreSQL; this checkout, built, migrates with its migrate command while the old
 * one serves; its service starts, the load balancer turns to it, and the old one drains on SIGTERM. Reports the failed
 * requests (only 503 with Retry-After allowed, sent again), the events lost or applied twice, the
 * longest old-release write during the migration, and how long the sockets took to reconnect.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { buildCheckout, buildScript, checkoutRelease, startService } from '../compat/checkout.js';
import { readReleases } from '../compat/fixtures.js';
import { setUp } from '../compat/scenario.js';
import type { Metrics } from './context.js';
import { sampleLockWaits } from './lockWaits.js';
import { percentile, round } from './stats.js';
import { LoadStats, UpgradeDriver, type Target } from './upgradeLoad.js';

export interface UpgradeSizes {
  drivers: number;
  /** How often each driver pushes. */
  intervalMs: number;
  /** Load on the old release before the migration, and on the new one after the drain. */
  settleMs: number;
}
export const fullUpgradeSizes: UpgradeSizes = { drivers: 200, intervalMs: 1000, settleMs: 10_000 };
export const tinyUpgradeSizes: UpgradeSizes = { drivers: 6, intervalMs: 300, settleMs: 1500 };

const ADMIN_KEY = 'upgrade-admin-key-0123456789abcdef';
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function ready(url: string) {
  // Minutes: on a year's database the instance starts slower on a loaded machine.
  for (let i = 0; i < 1200; i++) {
    if ((await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200) return;
    await pause(100);
  }
  throw new Error(`${url} never turned ready`);
}

export async function upgrade(databaseUrl: string, sizes: UpgradeSizes, log: (line: string) => void): Promise<Metrics> {
  const previous = readReleases()
    .filter((r) => r.commit)
    .at(-1)!;
  log(`  building the previous release ${previous.version} (${previous.commit!.slice(0, 7)}) in a worktree, and this checkout`);
  const checkout = checkoutRelease(previous.commit!);
  const build = buildCheckout();
  // At info: the start's line names the address (startService reads it).
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tourline-upgrade-'));
  const env = { DATABASE_URL: databaseUrl, DATA_DIR: dataDir, ADMIN_API_KEY: ADMIN_KEY, SHUTDOWN_DRAIN_MS: '1000', LOG_LEVEL: 'info' };
  const children: { kill(signal?: NodeJS.Signals): boolean }[] = [];
  try {
    const old = await startService(checkout.dir, env);
    children.push(old.child);
    await ready(old.url);
    let target: Target = { url: old.url, name: 'old' };
    const stats = new LoadStats();
    const drivers = [];
    for (let n = 0; n < sizes.drivers; n++) {
      const day = await setUp(old.url, ADMIN_KEY, 60_000 + n, `up-${n}-${Date.now().toString(36)}`);
      const delivery = day.tour.deliveries[0];
      const item = delivery.positions.find((p) => p.lineNumber === 10)!;
      const freshToken = async (url: string) => {
        const response = await fetch(`${url}/dev/token`, {
          method: 'POST',
          headers: { 'x-admin-api-key': ADMIN_KEY, 'content-type': 'application/json' },
          body: JSON.stringify({ personalnummer: 60_000 + n }),
        });
        return ((await response.json()) as { accessToken: string }).accessToken;
      };
      drivers.push(new UpgradeDriver(day.token, freshToken, item.id, delivery.id, n % 3 === 0, () => target, stats));
    }
    const running = drivers.map((d) => d.run(sizes.intervalMs));
    log(`  ${sizes.drivers} drivers push to the old release`);
    await pause(sizes.settleMs);

    log('  migrating while the old release serves');
    const locks = await sampleLockWaits(databaseUrl);
    const migrationStart = Date.now();
    const [node, migrate] = buildScript(build.dir, 'migrate:prod');
    await promisify(execFile)(node, migrate, {
      cwd: build.dir,
      env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
    });
    const migrationEnd = Date.now();
    const lockWait = await locks.stop();
    log(`  migrated in ${migrationEnd - migrationStart} ms`);
    if (lockWait.ms) log(`  longest lock wait meanwhile ${lockWait.ms} ms: ${lockWait.waiting} waited for ${lockWait.blockedBy}`);

    log('  starting the new release, draining the old one');
    const current = await startService(build.dir, env);
    children.push(current.child);
    await ready(current.url);
    target = { url: current.url, name: 'new' };
    log('  the new release is ready; SIGTERM to the old one');
    const drained = new Promise((resolve) => old.child.once('exit', resolve));
    old.child.kill('SIGTERM');
    await drained;
    log('  the old release has stopped');
    await pause(sizes.settleMs);
    for (const d of drivers) d.stop();
    await Promise.all(running);

    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    const [recorded, twice] = await Promise.all([
      db.query('SELECT count(*)::int AS n FROM processed_events WHERE event_id = ANY($1::uuid[])', [stats.eventIds]),
      db.query(
        'SELECT count(*)::int AS n FROM (SELECT 1 FROM scan_audit WHERE client_scan_id = ANY($1::uuid[]) GROUP BY client_scan_id HAVING count(*) > 1) t',
        [stats.eventIds],
      ),
    ]);
    await db.end();
    const duringMigration = stats.sent.filter((s) => s.target === 'old' && s.startedAt >= migrationStart && s.startedAt <= migrationEnd);
    const slowest = duringMigration.reduce<(typeof duringMigration)[number] | undefined>((a, b) => (a && a.ms >= b.ms ? a : b), undefined);
    if (stats.failures.length) log(`  failed requests: ${[...new Set(stats.failures)].slice(0, 5).join('; ')}`);
    return {
      drivers: sizes.drivers,
      requests: stats.sent.length,
      failed_requests: stats.failures.length,
      retried_503: stats.retried503,
      token_refreshes: stats.tokenRefreshes,
      events: stats.eventIds.length,
      events_lost: stats.eventIds.length - recorded.rows[0].n,
      events_doubled: twice.rows[0].n,
      migration_ms: migrationEnd - migrationStart,
      old_writes_during_migration: duringMigration.length,
      old_write_stall_max_ms: Math.max(0, ...duringMigration.map((s) => s.ms)),
      // When in the migration the longest write began: the schema change comes first, the backfills after.
      old_write_stall_at_ms: slowest ? slowest.startedAt - migrationStart : 0,
      lock_wait_max_ms: lockWait.ms,
      push_p99_ms: round(
        percentile(
          stats.sent.map((s) => s.ms),
          0.99,
        ),
      ),
      reconnects: stats.reconnectsMs.length,
      reconnect_p99_ms: stats.reconnectsMs.length ? round(percentile(stats.reconnectsMs, 0.99)) : 0,
      reconnect_max_ms: Math.max(0, ...stats.reconnectsMs),
    };
  } finally {
    for (const child of children) child.kill('SIGKILL');
    checkout.remove();
    build.remove();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * The scenario on a copy of the database at `sourceUrl` (the history scenario's year, loaded at
 * the previous release's schema), which stays as it is: the migration is one-way. The copy is
 * made file by file (`CREATE DATABASE … TEMPLATE`, which needs no other session on the source)
 * and dropped after; `keep` keeps it to look at.
 */
export async function upgradeOnCopy(sourceUrl: string, sizes: UpgradeSizes, log: (line: string) => void, keep = false): Promise<Metrics> {
  const source = new URL(sourceUrl);
  const name = decodeURIComponent(source.pathname.slice(1));
  const copy = new URL(sourceUrl);
  copy.pathname = `/${name}_upgrade`;
  const maintenance = new URL(sourceUrl);
  maintenance.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: maintenance.toString() });
  await admin.connect();
  const copyName = pg.escapeIdentifier(`${name}_upgrade`);
  try {
    log(`  copying ${name} to ${name}_upgrade`);
    const started = Date.now();
    await admin.query(`DROP DATABASE IF EXISTS ${copyName}`);
    await admin.query(`CREATE DATABASE ${copyName} TEMPLATE ${pg.escapeIdentifier(name)}`);
    const copyS = round((Date.now() - started) / 1000);
    const { rows } = await admin.query<{ size: string }>('SELECT pg_size_pretty(pg_database_size($1)) AS size', [`${name}_upgrade`]);
    log(`  copied in ${copyS} s (${rows[0].size})`);
    return { ...(await upgrade(copy.toString(), sizes, log)), copy_s: copyS };
  } finally {
    if (!keep) await admin.query(`DROP DATABASE IF EXISTS ${copyName} WITH (FORCE)`);
    await admin.end();
  }
}
