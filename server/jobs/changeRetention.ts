import { sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { meta } from '../db/schema.js';
import { HORIZON_KEY } from '../engine/changeFeed.js';

const DAY_MS = 24 * 3600 * 1000;

/**
 * Deletes the change-log entries created before `before` up to the first one that is not, and
 * raises the horizon in the same transaction. The cut is a seq, not a time: "everything up to the
 * horizon is gone, everything after it is kept" is what lets readers refuse an expired cursor
 * exactly. `created_at` is the start of the writing transaction and need not grow with seq, so an
 * old entry behind a newer one waits for a later run. Finding the cut walks the log in seq order
 * from its oldest entry and stops at the first one to keep: it reads what it deletes and not the
 * whole log (a scan of millions of rows, seconds of a busy database's CPU).
 */
export async function pruneChangeLog(db: Db, before: Date): Promise<{ horizon: number; deleted: number }> {
  return db.transaction(async (tx) => {
    const cut = await tx.execute<{ seq: string | null }>(sql`SELECT coalesce(
      (SELECT seq - 1 FROM change_log WHERE created_at >= ${before.toISOString()}::timestamptz ORDER BY seq LIMIT 1),
      (SELECT max(seq) FROM change_log))::text AS seq`);
    const seq = cut.rows[0].seq;
    if (seq === null) return { horizon: await readHorizon(tx), deleted: 0 };
    const deleted = await tx.execute<{ n: string }>(sql`WITH d AS (DELETE FROM change_log WHERE seq <= ${seq}::bigint RETURNING 1) SELECT count(*)::text AS n FROM d`);
    if (Number(deleted.rows[0].n) === 0) return { horizon: await readHorizon(tx), deleted: 0 };
    await tx.insert(meta).values({ key: HORIZON_KEY, value: seq })
      .onConflictDoUpdate({ target: meta.key, set: { value: sql`greatest(${meta.value}::bigint, excluded.value::bigint)::text` } });
    return { horizon: await readHorizon(tx), deleted: Number(deleted.rows[0].n) };
  });
}

async function readHorizon(db: Db): Promise<number> {
  const result = await db.execute<{ value: string }>(sql`SELECT value FROM ${meta} WHERE key = ${HORIZON_KEY}`);
  return Number(result.rows[0]?.value ?? 0);
}

/**
 * Prunes once shortly after start and then daily. Every instance may run it: pruning twice
 * deletes nothing more and the horizon only grows.
 */
export function startChangeRetention(options: { db: Db; retentionDays: number; logger: Logger }) {
  const run = async () => {
    try {
      const { horizon, deleted } = await pruneChangeLog(options.db, new Date(Date.now() - options.retentionDays * DAY_MS));
      if (deleted > 0) options.logger.info({ deleted, horizon }, 'change log pruned');
    } catch (error) {
      options.logger.error({ err: error }, 'change log pruning failed');
    }
  };
  let running: Promise<void> | undefined;
  const tick = () => { running ??= run().finally(() => { running = undefined; }); };
  const first = setTimeout(tick, 60_000);
  const daily = setInterval(tick, DAY_MS);
  first.unref();
  daily.unref();
  return {
    async stop() {
      clearTimeout(first);
      clearInterval(daily);
      await running;
    },
  };
}
