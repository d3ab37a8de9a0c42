import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { is, Placeholder, sql, type Query, type SQL } from 'drizzle-orm';
import { PgDialect, type PgDatabase, type PgPreparedQuery, type PgQueryResultHKT, type PreparedQueryConfig } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import type pg from 'pg';
import type { Logger } from 'pino';
import { DatabaseHealth, DatabaseUnavailable } from './availability.js';
import { listenPostgres } from './listener.js';
import { connectionConfig, defaultTimeouts, GuardedClient, PatientPool, type DatabaseTimeouts } from './postgres.js';
import { runBackfills } from './backfills.js';
import { buildLateIndexes } from './lateIndexes.js';
import { migratePostgres, migrationsFolder } from './migrate.js';
import * as schema from './schema.js';

/** Raw results of both drivers (pg and PGlite) carry their rows in `rows`. */
interface Rows<T> {
  rows: T[];
}
export interface RowsResultHKT extends PgQueryResultHKT {
  type: Rows<this['row']>;
}
/**
 * A database handle or a transaction: both run queries the same way. Built without drizzle's
 * relational queries (`db.query`), which nothing uses: with them every transaction would build a
 * query builder per table.
 */
export type Db = PgDatabase<RowsResultHKT>;

const dialect = new PgDialect();
const statementTexts = new Map<string, Query>();
/** Per connection (a pool's client, the pool itself, PGlite): its statements by name. */
const preparedByClient = new WeakMap<object, Map<string, PgPreparedQuery<PreparedQueryConfig>>>();

/**
 * A named prepared statement: PostgreSQL parses and plans it once per connection rather than on
 * every call (PGlite, in process, runs it unnamed), and its text is built once per process.
 * `build` writes it with `sql.placeholder(key)` for every value, `values` binds them; a name
 * stands for one text, so a statement with variants names each variant. For statements run
 * often: building a statement of drizzle's parts costs more than running a small one.
 */
export async function executePrepared<T>(db: Db, name: string, build: () => SQL, values: Record<string, unknown> = {}): Promise<T[]> {
  let query = statementTexts.get(name);
  if (!query) {
    query = dialect.sqlToQuery(build());
    // A value built into the text would answer every later call with the first call's value.
    if (query.params.some((param) => !is(param, Placeholder))) throw new Error(`Statement ${name} has a value that is not a placeholder`);
    statementTexts.set(name, query);
  }
  // drizzle's object for a statement (its text, parameter slots and type parsers) is made once per
  // connection, as PostgreSQL's plan is, instead of on every call.
  const client = (db._.session as unknown as { client: object }).client;
  let prepared = preparedByClient.get(client);
  if (!prepared) preparedByClient.set(client, (prepared = new Map()));
  let statement = prepared.get(name);
  if (!statement) prepared.set(name, (statement = db._.session.prepareQuery(query, undefined, name, false)));
  const result = (await statement.execute(values)) as Rows<T>;
  return result.rows;
}

/**
 * Settings for the rest of a transaction (`SET LOCAL`), sent ahead of its next statement rather
 * than in a round trip of their own. A setting that fails aborts the transaction, so the next
 * statement fails too; the promise is there for a caller that wants to wait for it.
 */
export function setLocal(tx: Db, settings: Record<string, string>): Promise<void> {
  // Names are the code's own; a prepared statement per set of names, as it runs in every transaction.
  const names = Object.keys(settings);
  const calls = () => names.map((name) => sql`set_config(${sql.raw(`'${name}'`)}, ${sql.placeholder(name)}, true)`);
  // executePrepared sends the statement at once, ahead of what the caller issues next.
  const done = executePrepared(tx, `set_local_${names.join('_')}`, () => sql`SELECT ${sql.join(calls(), sql`, `)}`, settings).then(
    () => undefined,
  );
  done.catch(() => undefined);
  return done;
}

/**
 * PostgreSQL plans a prepared statement with array parameters afresh on every call, as a plan for
 * the values at hand looks cheaper; for the engine's small statements the planning costs more
 * than running them. These settings keep the connection's one plan of each. That plan cannot
 * know how many ids an array holds (it assumes ten), and at the default cost of a random page
 * it would scan a table of a few thousand rows to join them; a page cost fit for data in memory
 * or on SSD keeps it looking the rows up by key.
 */
export const GENERIC_PLANS = { plan_cache_mode: 'force_generic_plan', random_page_cost: '1.1' };

/**
 * Runs a transaction's last statement. On PostgreSQL the transaction's COMMIT goes out with it:
 * one round trip fewer, and the transaction's locks go sooner. Nothing may run or fail in the
 * transaction after it. In a nested transaction (a savepoint) or on PGlite it is a statement as any.
 */
export function lastStatement<T>(tx: Db, issue: () => PromiseLike<T>): Promise<T> {
  const client = (tx._.session as unknown as { client?: unknown }).client;
  const outermost = (tx as unknown as { nestedIndex?: number }).nestedIndex === 0;
  return client instanceof GuardedClient && outermost ? client.commitWith(issue) : Promise.resolve(issue());
}

/**
 * Runs `statement` in a transaction of its own, after `settings` and the statement `ahead` sends
 * without waiting for its answer (if it fails, so does the transaction). On PostgreSQL all of it
 * goes out in one write with the BEGIN and the COMMIT.
 */
export function oneWriteTransaction<T>(
  db: Db,
  statement: (tx: Db) => Promise<T[]>,
  { settings, ahead }: { settings?: Record<string, string>; ahead?: (tx: Db) => unknown } = {},
): Promise<T[]> {
  return db.transaction((tx) => {
    if (settings) void setLocal(tx, settings);
    ahead?.(tx);
    return lastStatement(tx, () => statement(tx));
  });
}

/**
 * The name suffix of a statement variant that differs from the others only by which of its
 * optional parts are present: `_items_notes` for `{ items: true, notes: true, services: false }`.
 */
export const variantName = (parts: Record<string, unknown>) =>
  Object.entries(parts)
    .map(([key, present]) => (present ? `_${key}` : ''))
    .join('');

export { migrationsFolder };

export interface Database {
  kind: 'pglite' | 'postgres';
  db: Db;
  /** Statements run through drizzle since start; tests and benchmarks read it. */
  queries: { count: number };
  /** Random id of this database's installation; cursors from another installation are refused. */
  epoch: string;
  /** Reachability and the LISTEN connection's state; readiness reads it. */
  health: DatabaseHealth;
  /** Whether the database answers, within the connect timeout; throws `DatabaseUnavailable` if not. */
  check(): Promise<void>;
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  /** The pool's connections and waiting requests (metrics); PostgreSQL only. */
  poolStats?(): { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

export interface DatabaseOptions {
  url?: string;
  /** A connection straight to PostgreSQL (not a transaction pooler) for migrations and LISTEN; `url` without one. */
  directUrl?: string;
  dataDir?: string;
  /** PGlite in memory from this dump of a migrated data directory (`migratedPgliteImage`), instead of an empty one. */
  pgliteImage?: Blob;
  poolSize?: number;
  timeouts?: DatabaseTimeouts;
  logger?: Logger;
}

/** Opens PostgreSQL when a URL is given, else PGlite under `dataDir` (in memory without one); migrates. */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const queries = { count: 0 };
  const logger = {
    logQuery: () => {
      queries.count += 1;
    },
  };
  const health = new DatabaseHealth(options.logger);
  let database: Omit<Database, 'epoch' | 'health' | 'check'>;
  let checkTimeoutMs = 5000;
  if (options.url) {
    const url = options.url;
    const timeouts = options.timeouts ?? defaultTimeouts;
    checkTimeoutMs = timeouts.connectMs;
    const directUrl = options.directUrl ?? url;
    await migratePostgres(directUrl, timeouts, options.logger);
    const pool = new PatientPool({ ...connectionConfig(url, timeouts), max: options.poolSize ?? 10 }, timeouts.poolWaitMs, health);
    pool.on('error', () => {
      /* an idle client lost its connection; the pool replaces it */
    });
    // A connection lost while checked out (mid-transaction) emits 'error' on its client, which
    // without a listener ends the process; the query in flight fails anyway, and the pool drops
    // the dead client when it is released.
    pool.on('connect', (client) => {
      client.on('error', () => undefined);
    });
    const db = drizzlePg({ client: pool as pg.Pool, logger });
    database = {
      kind: 'postgres',
      db: db as unknown as Db,
      queries,
      listen: (channel, onPayload) => listenPostgres({ url: directUrl, timeouts, health }, channel, onPayload),
      poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
      close: () => pool.end(),
    };
  } else {
    let dataDir: string | undefined;
    if (options.dataDir) {
      dataDir = path.join(options.dataDir, 'pglite');
      mkdirSync(dataDir, { recursive: true });
    }
    const { client, db } = await openPglite(dataDir ? { dataDir } : { loadDataDir: options.pgliteImage }, logger);
    database = {
      kind: 'pglite',
      db: db as unknown as Db,
      queries,
      listen: async (channel, onPayload) => {
        const unlisten = await client.listen(channel, onPayload);
        return async () => {
          await unlisten();
        };
      },
      close: () => client.close(),
    };
  }
  const epoch = await ensureEpoch(database.db);
  const check = async () => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DatabaseUnavailable(`the database did not answer within ${checkTimeoutMs} ms`)), checkTimeoutMs);
    });
    try {
      await Promise.race([database.db.execute(sql`SELECT 1`), timeout]);
    } finally {
      clearTimeout(timer);
    }
  };
  health.attach(options.logger, check);
  return { ...database, epoch, health, check };
}

/** PGlite, migrated (a dump of a migrated data directory has nothing left to do but the check). */
async function openPglite(options: { dataDir?: string; loadDataDir?: Blob }, logger?: { logQuery: () => void }) {
  // Loaded only here: a service on PostgreSQL should not spend its start loading PGlite.
  const [{ PGlite }, { drizzle: drizzlePglite }, { migrate: migratePglite }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('drizzle-orm/pglite'),
    import('drizzle-orm/pglite/migrator'),
  ]);
  const client = await PGlite.create(options);
  const db = drizzlePglite({ client, logger });
  await migratePglite(db, { migrationsFolder });
  await buildLateIndexes((text, values) => client.query(text, values), false);
  await runBackfills(db as unknown as Db);
  return { client, db };
}

/**
 * A dump of an in-memory PGlite migrated to the current schema, taken before it has an epoch:
 * every database loaded from it is an installation of its own. Loading one takes a fraction of
 * the time migrating an empty one does (tests start many).
 */
export async function migratedPgliteImage(): Promise<Blob> {
  const { client } = await openPglite({});
  try {
    return await client.dumpDataDir('none');
  } finally {
    await client.close();
  }
}

async function ensureEpoch(db: Db): Promise<string> {
  await db.insert(schema.meta).values({ key: 'epoch', value: randomUUID() }).onConflictDoNothing();
  const [row] = await db
    .select()
    .from(schema.meta)
    .where(sql`${schema.meta.key} = 'epoch'`);
  return row.value;
}
