import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';

const DAY_MS = 24 * 3600 * 1000;

/**
 * The start of the deduplication window: an event that occurred before it is refused, because its
 * id may have been forgotten and a copy of an event applied long ago could not be told from a new
 * one (see `pruneProcessedEvents`). Every instance must use the same number of days.
 */
export const eventWindowStart = (retentionDays: number, now = Date.now()) => new Date(now - retentionDays * DAY_MS);

/**
 * Forgets the ids of events that both occurred (device time) and arrived before `before`. Their
 * records only served to answer a copy as `duplicate`; a copy arriving now occurred before the
 * window's start, so the engine refuses it without them, and nothing is applied twice. Deleted in
 * batches through the index on the arrival time, so no statement holds many rows or runs long.
 * The audit and protocol tables (scans, credits, payments, completions) stay: they are the history.
 */
export async function pruneProcessedEvents(db: Db, before: Date, batch = 10_000): Promise<number> {
  let deleted = 0;
  for (;;) {
    const result = await db.execute<{ n: number }>(sql`
      WITH gone AS (DELETE FROM processed_events WHERE event_id IN (
        SELECT event_id FROM processed_events
        WHERE received_at < ${before.toISOString()}::timestamptz AND (occurred_at IS NULL OR occurred_at < ${before.toISOString()}::timestamptz)
        LIMIT ${batch}) RETURNING 1)
      SELECT count(*)::int AS n FROM gone`);
    const n = Number(result.rows[0].n);
    deleted += n;
    if (n < batch) return deleted;
  }
}
