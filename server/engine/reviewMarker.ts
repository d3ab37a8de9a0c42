import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { creditEvents, deliveries, reviewResolutions, scanAudit } from '../db/schema.js';
import { inList } from '../db/jsonRows.js';

/**
 * Keeps the review's marker on the deliveries (deliveries.review_changed_at): the receipt time of
 * their latest removal or its undoing and of their latest money credit action, read back from
 * the rows just written in this transaction (their times are the database's, to the microsecond).
 * Called by every write of such a row, under the delivery's row lock.
 */
export async function keepReviewChange(tx: Db, deliveryIds: string[]): Promise<void> {
  if (deliveryIds.length === 0) return;
  await tx.execute(sql`UPDATE ${deliveries} SET review_changed_at = GREATEST(
      (SELECT max(${scanAudit.receivedAt}) FROM ${scanAudit}
        WHERE ${scanAudit.deliveryId} = ${deliveries.id} AND ${scanAudit.action} IN ('remove', 'unremove')),
      (SELECT max(${creditEvents.receivedAt}) FROM ${creditEvents} WHERE ${creditEvents.deliveryId} = ${deliveries.id}))
    WHERE ${inList(deliveries.id, [...new Set(deliveryIds)])}`);
}

/** Keeps the time of the delivery's latest confirmation on it (deliveries.review_resolved_at), as keepReviewChange does. */
export async function keepReviewResolution(tx: Db, deliveryId: string): Promise<void> {
  await tx.execute(sql`UPDATE ${deliveries} SET review_resolved_at =
      (SELECT max(${reviewResolutions.resolvedAt}) FROM ${reviewResolutions} WHERE ${reviewResolutions.deliveryId} = ${deliveries.id})
    WHERE ${deliveries.id} = ${deliveryId}`);
}
