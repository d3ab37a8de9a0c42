import { and, eq, sql } from 'drizzle-orm';
import type { ErpWriteBack } from '../../shared/schemas/imports.js';
import type { Db } from '../db/client.js';
import { attachments, completions, deliveries } from '../db/schema.js';
import { erpWriteBackOf, type ErpWriteBackRow } from '../shapes/importRuns.js';
import { cutPage, type Page, type PageRequest } from './page.js';

/** A write-back's place in the list, oldest first: the time it was recorded (ISO, to the microsecond), its kind and delivery. */
export type WriteBackKey = [recordedAt: string, kind: string, deliveryId: string];

/**
 * Completions and cancellations whose write-back to the ERP has not succeeded (or of one
 * status), oldest first: the back office's list of what did not reach the ERP and why.
 */
export async function erpWriteBacks(
  db: Db,
  status: ErpWriteBack['status'] | null,
  page?: PageRequest<WriteBackKey>,
): Promise<Page<ErpWriteBack, WriteBackKey>> {
  const wanted = status ? sql`w.status = ${status}` : sql`w.status <> 'succeeded'`;
  const after = page?.after
    ? sql`AND (w.recorded_at, w.kind, w.delivery_id) > (${page.after[0]}::timestamptz, ${page.after[1]}::text, ${page.after[2]}::uuid)`
    : sql``;
  const result = await db.execute<ErpWriteBackRow>(sql`
    SELECT w.*, to_char(w.recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS key,
      d.belegart_id, d.belegnummer
    FROM (
      SELECT 'completion' AS kind, delivery_id, received_at AS recorded_at, erp_push_status AS status, erp_push_attempts AS attempts,
        erp_pushed_at AS pushed_at, erp_push_error AS error, erp_next_attempt_at AS next_attempt_at
      FROM completions
      UNION ALL
      SELECT 'cancellation', delivery_id, received_at, push_status, push_attempts, pushed_at, push_error, next_attempt_at
      FROM erp_cancellations
    ) w JOIN deliveries d ON d.id = w.delivery_id
    WHERE ${wanted} ${after}
    ORDER BY w.recorded_at, w.kind, w.delivery_id
    ${page ? sql`LIMIT ${page.limit + 1}` : sql``}`);
  return cutPage(result.rows, page?.limit ?? result.rows.length, (r): WriteBackKey => [r.key, r.kind, r.delivery_id], erpWriteBackOf);
}

/** The stored delivery report of a completed delivery: its store reference and number, or undefined. */
export async function deliveryReport(db: Db, deliveryId: string) {
  const [row] = await db
    .select({ reference: attachments.reference, contentType: attachments.contentType, belegnummer: deliveries.belegnummer })
    .from(completions)
    .innerJoin(deliveries, eq(deliveries.id, completions.deliveryId))
    .innerJoin(attachments, and(eq(attachments.id, completions.reportAttachmentId)))
    .where(eq(completions.deliveryId, deliveryId));
  return row;
}
