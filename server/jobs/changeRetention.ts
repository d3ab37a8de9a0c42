import { sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import { isDatabaseUnavailable } from '../db/availability.js';
import type { Db } from '../db/client.js';
import { meta } from '../db/schema.js';
import { HORIZON_KEY } from '../engine/changeFeed.js';
import { stableHead } from '../engine/changeLog.js';
import { pruneDevices } from '../engine/deviceReports.js';
import { eventWindowStart, pruneProcessedEvents } from './eventRetention.js';
import { asJobRun } from '../observability/requestContext.js';

const DAY_MS = 24 * 3600 * 1000;
/** How soon a job run that failed on the database is tried again. */
export const DATABASE_RETRY_MS = 60_000;

/**
 * Deletes the change-log entries created before `before`, from the oldest up to the first one to
 * keep, and raises the horizon to the last one deleted, in one transaction. The cut is a seq, not
 * a time: "everything up to the horizon is gone, everything after it is kept" is what lets
 * readers refuse an expired cursor exactly. So it stays below the stable head (a change still in
 * flight may hold a smaller seq than one deleted), and `created_at`, the start of the writing
 * transaction, need not grow with seq: an old entry behind a newer one waits for a later run.
 * The walk from the oldest entry reads what it deletes, not the whole log (a scan of millions of
 * rows, seconds of a busy database's CPU).
 */
export async function pruneChangeLog(db: Db, before: Date): Promise<{ horizon: number; deleted: number }> {
  const head = await stableHead(db);
  return db.transaction(async (tx) => {
    const pruned = await tx.execute<{ last: string | null; deleted: string }>(sql`
      WITH keep AS (SELECT seq FROM change_log WHERE created_at >= ${before.toISOString()}::timestamptz AND seq <= ${head} ORDER BY seq LIMIT 1),
        gone AS (DELETE FROM change_log WHERE seq <= ${head} AND seq < coalesce((SELECT seq FROM keep), ${head} + 1) RETURNING seq)
      SELECT max(seq)::text AS last, count(*)::text AS deleted FROM gone`);
    const { last, deleted } = pruned.rows[0];
    if (last === null) return { horizon: await readHorizon(tx), deleted: 0 };
    await tx
      .insert(meta)
      .values({ key: HORIZON_KEY, value: last })
      .onConflictDoUpdate({ target: meta.key, set: { value: sql`greatest(${meta.value}::bigint, excluded.value::bigint)::text` } });
    return { horizon: await readHorizon(tx), deleted: Number(deleted) };
  });
}

async function readHorizon(db: Db): Promise<number> {
  const result = await db.execute<{ value: string }>(sql`SELECT value FROM ${meta} WHERE key = ${HORIZON_KEY}`);
  return Number(result.rows[0]?.value ?? 0);
}

/**
 * Prunes the change log and the processed-event ids once shortly after start and then daily.
 * Every instance may run it: pruning twice deletes nothing more and the horizon only grows.
 */
export function startChangeRetention(options: {
  db: Db;
  retentionDays: number;
  eventRetentionDays: number;
  /** Device reports not renewed for this long go (DEVICE_RETENTION_DAYS). */
  deviceRetentionDays: number;
  logger: Logger;
  /** How soon a run that failed on the database is tried again, and the first run after start (tests shorten them). */
  retryMs?: number;
  firstRunMs?: number;
}) {
  let retry: NodeJS.Timeout | undefined;
  const run = async () => {
    try {
      const { horizon, deleted } = await pruneChangeLog(options.db, new Date(Date.now() - options.retentionDays * DAY_MS));
      if (deleted > 0) options.logger.info({ deleted, horizon }, 'change log pruned');
      const forgotten = await pruneProcessedEvents(options.db, eventWindowStart(options.eventRetentionDays));
      if (forgotten > 0) options.logger.info({ deleted: forgotten }, 'processed event ids pruned');
      const dropped = await pruneDevices(options.db, new Date(Date.now() - options.deviceRetentionDays * DAY_MS));
      if (dropped > 0) options.logger.info({ deleted: dropped }, 'device reports past their retention dropped');
    } catch (error) {
      if (!isDatabaseUnavailable(error)) {
        options.logger.error({ err: error }, 'retention pruning failed');
        return;
      }
      // An outage must not cost a day: the run is tried again soon.
      const retryMs = options.retryMs ?? DATABASE_RETRY_MS;
      options.logger.warn({ retryInMs: retryMs }, 'retention pruning failed: database unavailable');
      retry = setTimeout(tick, retryMs).unref();
    }
  };
  let running: Promise<void> | undefined;
  const tick = () => {
    running ??= asJobRun('retention', run).finally(() => {
      running = undefined;
    });
  };
  const first = setTimeout(tick, options.firstRunMs ?? 60_000);
  const daily = setInterval(tick, DAY_MS);
  first.unref();
  daily.unref();
  return {
    async stop() {
      clearTimeout(first);
      clearInterval(daily);
      clearTimeout(retry);
      await running;
      clearTimeout(retry);
    },
  };
}
