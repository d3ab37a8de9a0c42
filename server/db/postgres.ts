import type { Socket } from 'node:net';
import pg from 'pg';
import type { Logger } from 'pino';
import { databaseFault, type DatabaseHealth } from './availability.js';

export interface DatabaseTimeouts {
  /** A new connection's handshake. */
  connectMs: number;
  /** How long a request waits for a pooled connection, retrying refused ones, before 503. */
  poolWaitMs: number;
  statementMs: number;
  lockMs: number;
  idleInTransactionMs: number;
  /** How long the start keeps trying to reach the database; 0: for ever. */
  startMs: number;
  /** How long migrating waits for another session's migration lock; 0: for ever. */
  migrationLockMs: number;
}

export const defaultTimeouts: DatabaseTimeouts = {
  connectMs: 3000,
  poolWaitMs: 3000,
  statementMs: 5000,
  lockMs: 3000,
  idleInTransactionMs: 10_000,
  startMs: 0,
  migrationLockMs: 600_000,
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
// Keepalive probes notice a connection dropped silently (NAT, failover).
const KEEPALIVE = { keepAlive: true, keepAliveInitialDelayMillis: 10_000 };

/** Settings of every connection: the server cancels long statements and lock waits, and ends abandoned transactions. */
export function connectionConfig(url: string, timeouts: DatabaseTimeouts): pg.ClientConfig {
  return {
    connectionString: url,
    application_name: 'tourline',
    ...KEEPALIVE,
    connectionTimeoutMillis: timeouts.connectMs,
    statement_timeout: timeouts.statementMs,
    lock_timeout: timeouts.lockMs,
    idle_in_transaction_session_timeout: timeouts.idleInTransactionMs,
    // A frozen server cancels nothing: the client gives up a little after the server would have.
    query_timeout: timeouts.statementMs + 1000,
  };
}

type QueryCall = (...args: unknown[]) => unknown;
type Callback = (error: unknown, result?: unknown) => void;

/** What drizzle's `begin`, `commit` and `rollback` are answered with when they send nothing themselves. */
const answered = (command: string) => ({ command, rowCount: null, oid: null, rows: [], fields: [] });
const isEnd = (text: string | undefined) => text === 'commit' || text === 'rollback';

/**
 * A pooled client. Its connection is dropped when a query times out on our side: the server may
 * still run it, and a later user of the connection must never find itself inside that transaction.
 *
 * Queries are pipelined: those issued before the first one's answer go out at once and are
 * answered in order. A transaction's `begin` (drizzle's, sent on its own) is held back and written
 * together with the transaction's first statement and those issued in the same turn, so opening
 * a transaction costs no round trip of its own; one that runs no statement sends nothing at all.
 * A transaction's last statement may take its COMMIT along (`commitWith`); drizzle's own `commit`
 * is then answered here. Under many small transactions each round trip is a write and a wake-up
 * on both sides, and a row lock is held until the COMMIT arrives.
 */
export class GuardedClient extends pg.Client {
  private beginHeld = false;
  /** The next statement is the transaction's last: its COMMIT goes with it. */
  private commitNext = false;
  /** The COMMIT has gone out; the transaction takes no further statement. */
  private ended = false;

  constructor(config: pg.ClientConfig) {
    super({ ...config, pipeline: true });
  }

  /**
   * Issues a transaction's last statement together with its COMMIT, in one write: the answer is
   * the statement's, or the commit's error. If the statement fails, the COMMIT ends the
   * transaction as a rollback. drizzle runs a query when it is awaited, so it is started here; a
   * statement that reaches this client only later goes alone, and drizzle's `commit` after it.
   */
  commitWith<T>(issue: () => PromiseLike<T>): Promise<T> {
    this.commitNext = true;
    try {
      return Promise.resolve(issue().then((result) => result));
    } finally {
      this.commitNext = false;
    }
  }

  query(...args: unknown[]): never {
    const callback = typeof args.at(-1) === 'function' ? (args.at(-1) as Callback) : undefined;
    const config = args[0] as string | { text?: string; submit?: unknown } | undefined;
    const text = typeof config === 'string' ? config : config?.text;
    const plain = !callback && (typeof config === 'string' || typeof config?.submit !== 'function');
    if (plain && text === 'begin') {
      this.beginHeld = true;
      this.ended = false;
      return Promise.resolve(answered('BEGIN')) as never;
    }
    if (this.ended) {
      if (!plain || !isEnd(text)) throw new Error('A statement after the COMMIT that went with the last one');
      this.ended = false;
      return Promise.resolve(answered(text!.toUpperCase())) as never;
    }
    const withBegin = this.beginHeld;
    const withCommit = this.commitNext;
    this.beginHeld = false;
    this.commitNext = false;
    if (withBegin && plain && isEnd(text)) return Promise.resolve(answered(text!.toUpperCase())) as never;
    if (!withBegin && !withCommit) return this.send(args) as never;
    if (withCommit && callback) throw new Error('commitWith takes a statement that answers with a promise');
    // All in one write; the statement fails if the begin did (it would have run outside a transaction).
    const stream = this.stream;
    let beginError: unknown;
    stream.cork();
    try {
      if (withBegin) this.send(['BEGIN', (error: unknown) => (beginError = error)]);
      if (callback) {
        args[args.length - 1] = (error: unknown, result: unknown) => callback(beginError ?? error, result);
        return this.send(args) as never;
      }
      const statement = (this.send(args) as Promise<unknown>).then((result) => {
        if (beginError) throw beginError;
        return result;
      });
      if (!withCommit) return statement as never;
      this.ended = true;
      const commit = this.send(['COMMIT']) as Promise<unknown>;
      // A failed statement's error is the one that says why; the COMMIT then only rolled back.
      commit.catch(() => undefined);
      return statement.then(async (result) => {
        await commit;
        return result;
      }) as never;
    } finally {
      // Statements the transaction issues in the same turn (settings, a lock and a read) join this write.
      if (withBegin) process.nextTick(() => stream.uncork());
      else stream.uncork();
    }
  }

  /** The connection's socket (`pg` keeps it on an untyped field). */
  private get stream(): Socket {
    return (this as unknown as { connection: { stream: Socket } }).connection.stream;
  }

  private send(args: unknown[]): unknown {
    const query = pg.Client.prototype.query as QueryCall;
    const drop = (error: unknown) => {
      if ((error as Error | undefined)?.message === 'Query read timeout') this.stream.destroy();
    };
    const last = args.at(-1);
    if (typeof last === 'function') {
      const withDrop = [...args];
      withDrop[withDrop.length - 1] = (error: unknown, result: unknown) => {
        drop(error);
        (last as Callback)(error, result);
      };
      return query.apply(this, withDrop);
    }
    const result = query.apply(this, args) as Promise<unknown> | undefined;
    return result && typeof result.catch === 'function'
      ? result.catch((error: unknown) => {
          drop(error);
          throw error;
        })
      : result;
  }
}

/**
 * The pool: a request waits at most `poolWaitMs` for a connection. A new connection the server
 * refuses for a passing reason (all slots taken, starting up) is tried again within that time,
 * as the pool's own connections free up within milliseconds; while the database is known to be
 * down, it is not.
 */
export class PatientPool extends pg.Pool {
  constructor(
    config: pg.PoolConfig,
    private readonly waitMs: number,
    private readonly health: DatabaseHealth,
  ) {
    super({
      ...config,
      Client: GuardedClient as typeof pg.Client,
      connectionTimeoutMillis: Math.max(config.connectionTimeoutMillis ?? 0, waitMs),
    });
  }

  connect(): Promise<pg.PoolClient>;
  connect(callback: (error: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void): void;
  connect(
    callback?: (error: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void,
  ): Promise<pg.PoolClient> | void {
    const acquired = this.acquire();
    if (!callback) return acquired;
    acquired.then(
      (client) => callback(undefined, client, (release) => client.release(release as Error)),
      (error: Error) => callback(error, undefined, () => undefined),
    );
  }

  private async acquire(): Promise<pg.PoolClient> {
    const deadline = Date.now() + this.waitMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await (pg.Pool.prototype.connect as () => Promise<pg.PoolClient>).call(this);
      } catch (error) {
        const delay = Math.min(25 * 2 ** attempt, 500);
        const passing = (error as { code?: string }).code === '53300' || (error as { code?: string }).code === '57P03';
        if (!passing || !this.health.reachable || Date.now() + delay >= deadline) throw error;
        await sleep(delay);
      }
    }
  }
}

/**
 * A connection for the start: tried until the database answers, with a growing pause and one
 * line per try; after `startMs` (when set) the start gives up with one line. Errors that another
 * try cannot mend (a wrong password, a missing database) end the start at once.
 */
export async function connectAtStart(url: string, timeouts: DatabaseTimeouts, logger?: Logger): Promise<pg.Client> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    // No statement timeout: migrations may take long.
    const client = new pg.Client({
      connectionString: url,
      application_name: 'tourline start',
      ...KEEPALIVE,
      connectionTimeoutMillis: timeouts.connectMs,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      if (attempt > 1) logger?.warn(`database reachable after ${attempt} tries`);
      return client;
    } catch (error) {
      await client.end().catch(() => undefined);
      const reason = (error as Error).message || (error as { code?: string }).code || String(error);
      if (!databaseFault(error)) throw new Error(`cannot connect to the database: ${reason}`, { cause: error });
      const elapsed = Date.now() - started;
      if (timeouts.startMs > 0 && elapsed >= timeouts.startMs) {
        throw new Error(`database unreachable for ${Math.round(elapsed / 1000)} s (DATABASE_START_TIMEOUT_MS), giving up: ${reason}`, {
          cause: error,
        });
      }
      const delay = Math.min(500 * 2 ** (attempt - 1), 5000);
      logger?.warn(`database unreachable (try ${attempt}: ${reason}); trying again in ${delay / 1000} s`);
      await sleep(delay);
    }
  }
}

/** The migration lock stayed with another session for longer than `DATABASE_MIGRATION_LOCK_TIMEOUT_MS`. */
export class MigrationLockTimeout extends Error {}

/**
 * Takes the advisory lock that lets one of several instances starting together migrate. While
 * another session holds it, says every 10 s who that is; gives up after `timeoutMs` (0: never).
 */
export async function takeMigrationLock(client: pg.Client, key: number, timeoutMs: number, logger?: Logger) {
  const started = Date.now();
  let logged = 0;
  let holderText = 'another session';
  for (;;) {
    const {
      rows: [{ taken }],
    } = await client.query<{ taken: boolean }>('SELECT pg_try_advisory_lock($1) AS taken', [key]);
    if (taken) return;
    const waited = Date.now() - started;
    if (timeoutMs > 0 && waited >= timeoutMs) {
      throw new MigrationLockTimeout(
        `the migration lock is still held by ${holderText} after ${Math.round(waited / 1000)} s (DATABASE_MIGRATION_LOCK_TIMEOUT_MS)`,
      );
    }
    if (Date.now() - logged >= 10_000 || (timeoutMs > 0 && waited + 250 >= timeoutMs)) {
      logged = Date.now();
      const { rows } = await client.query<{
        pid: number;
        application_name: string;
        client_addr: string | null;
        backend_start: Date;
        state: string;
      }>(
        `SELECT a.pid, a.application_name, a.client_addr::text, a.backend_start, a.state FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid = $1`,
        [key],
      );
      const holder = rows[0];
      holderText = holder
        ? `pid ${holder.pid} (${holder.application_name || 'no application name'}, ${holder.client_addr ?? 'local'})`
        : 'another session';
      logger?.warn(
        holder
          ? {
              holder: {
                pid: holder.pid,
                application: holder.application_name,
                address: holder.client_addr,
                since: holder.backend_start,
                state: holder.state,
              },
            }
          : {},
        `waiting for the migration lock, held by ${holderText}`,
      );
    }
    await sleep(250);
  }
}
