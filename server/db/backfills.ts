import { sql, type SQL } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from './client.js';
import { entryHeadSql } from './deliverySql.js';
import { creditEvents, deliveries, reviewResolutions, scanAudit } from './schema.js';

/**
 * Data a migration's new column needs from the rows written before it. A migration only changes
 * the schema (adding a nullable column is a change of the catalogue, its table's lock held for
 * milliseconds): every pending migration runs in one transaction, and an UPDATE in it would hold
 * the row locks of all it touched, and the ALTER's table lock, until the last one commits, while
 * the instances of the release before wait to write. A backfill runs after the migrations have
 * committed, one transaction per batch of deliveries in id order, so a writer waits at most for
 * one batch. Each batch takes the later of what the row holds and what it computes, so a batch
 * never undoes what a writer of this release set meanwhile, and a batch that ran twice (a start
 * that stopped half-way) changes nothing. A finished backfill is recorded in `tourline_backfills`.
 */
interface Backfill {
  name: string;
  /** Fills the deliveries of `batch` (a subquery of their ids) and answers nothing. */
  fill(batch: SQL): SQL;
}

export const backfills: Backfill[] = [
  {
    // migrations/0013_review_marker.sql: the times of the latest change and confirmation (engine/reviewMarker.ts).
    name: '0013_review_marker',
    fill: (batch) => {
      const changed = sql`GREATEST(
        (SELECT max(${scanAudit.receivedAt}) FROM ${scanAudit}
          WHERE ${scanAudit.deliveryId} = ${deliveries.id} AND ${scanAudit.action} IN ('remove', 'unremove')),
        (SELECT max(${creditEvents.receivedAt}) FROM ${creditEvents} WHERE ${creditEvents.deliveryId} = ${deliveries.id}))`;
      const resolved = sql`(SELECT max(${reviewResolutions.resolvedAt}) FROM ${reviewResolutions}
        WHERE ${reviewResolutions.deliveryId} = ${deliveries.id})`;
      const newChanged = sql`GREATEST(${deliveries.reviewChangedAt}, ${changed})`;
      const newResolved = sql`GREATEST(${deliveries.reviewResolvedAt}, ${resolved})`;
      return sql`UPDATE ${deliveries} SET review_changed_at = ${newChanged}, review_resolved_at = ${newResolved}
        WHERE ${deliveries.id} IN (${batch})
          AND (${newChanged} IS DISTINCT FROM ${deliveries.reviewChangedAt} OR ${newResolved} IS DISTINCT FROM ${deliveries.reviewResolvedAt})`;
    },
  },
  {
    // migrations/0014_completed_entry_head.sql: the start of each completed delivery's list entry.
    name: '0014_completed_entry_head',
    fill: (batch) => sql`UPDATE ${deliveries} SET completed_entry_head = ${entryHeadSql}
      WHERE ${deliveries.id} IN (${batch}) AND ${deliveries.state} = 'completed' AND ${deliveries.completedEntryHead} IS NULL`,
  },
];

export const BACKFILL_BATCH = 1000;
const FIRST_ID = '00000000-0000-0000-0000-000000000000';

/**
 * Runs the backfills not yet recorded as done, each to its end, a batch per transaction. On
 * PostgreSQL the caller holds the migration lock, so one instance runs them while the others wait.
 */
export async function runBackfills(
  db: Db,
  options: { batchSize?: number; logger?: Logger } = {},
): Promise<{ name: string; batches: number }[]> {
  const batchSize = options.batchSize ?? BACKFILL_BATCH;
  await db.execute(sql`CREATE TABLE IF NOT EXISTS tourline_backfills (name text PRIMARY KEY, done_at timestamptz NOT NULL DEFAULT now())`);
  const { rows } = await db.execute<{ name: string }>(sql`SELECT name FROM tourline_backfills`);
  const done = new Set(rows.map((r) => r.name));
  const ran: { name: string; batches: number }[] = [];
  for (const backfill of backfills) {
    if (done.has(backfill.name)) continue;
    const started = Date.now();
    let after = FIRST_ID;
    let batches = 0;
    for (;;) {
      const last = await db.transaction(async (tx) => {
        const ids = sql`SELECT ${deliveries.id} FROM ${deliveries} WHERE ${deliveries.id} > ${after} ORDER BY ${deliveries.id} LIMIT ${batchSize}`;
        const { rows: bounds } = await tx.execute<{ last: string | null }>(sql`SELECT max(b.id::text) AS last FROM (${ids}) AS b`);
        if (bounds[0]?.last) await tx.execute(backfill.fill(sql`SELECT b.id FROM (${ids}) AS b`));
        return bounds[0]?.last ?? null;
      });
      if (last === null) break;
      after = last;
      batches++;
    }
    await db.execute(sql`INSERT INTO tourline_backfills (name) VALUES (${backfill.name}) ON CONFLICT (name) DO NOTHING`);
    options.logger?.info({ backfill: backfill.name, batches, durationMs: Date.now() - started }, 'backfill done');
    ran.push({ name: backfill.name, batches });
  }
  return ran;
}
