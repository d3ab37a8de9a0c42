import { and, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { SetDeliveryOrderResponse } from '../../shared/schemas/tours.js';
import type { Db } from '../db/client.js';
import { deliveries, deliveryItems, tours } from '../db/schema.js';
import { notFound, validation, type FieldProblem } from '../errors.js';
import { toDelivery, type ItemRow } from '../shapes/rows.js';
import { recordChanges } from './changeLog.js';

/**
 * Rewrites the order of a tour: `deliveryIds` must name every delivery of the tour exactly once.
 * Sets sortOrder 0..n-1 in one statement under the deliveries' row locks.
 */
export function setDeliveryOrder(db: Db, accountId: number, tourId: string, deliveryIds: string[]): Promise<SetDeliveryOrderResponse> {
  return db.transaction(async (tx) => {
    // The tour's row first, then its deliveries, as a re-sync locks them: the other way round the
    // two could wait on each other. No key update: a delivery joining the tour meanwhile only
    // needs the key (its foreign key check), and may.
    const [tour] = await tx
      .select({ id: tours.id })
      .from(tours)
      .where(and(eq(tours.id, tourId), eq(tours.accountId, accountId)))
      .for('no key update');
    if (!tour) throw notFound('Tour');
    const current = await tx
      .select({ id: deliveries.id })
      .from(deliveries)
      .where(eq(deliveries.tourId, tourId))
      .orderBy(deliveries.id)
      .for('update');
    const inTour = new Set(current.map((d) => d.id));

    const problems: FieldProblem[] = [];
    const seen = new Set<string>();
    deliveryIds.forEach((id, i) => {
      if (seen.has(id)) problems.push({ path: `deliveryIds.${i}`, message: `delivery ${id} appears more than once` });
      else if (!inTour.has(id)) problems.push({ path: `deliveryIds.${i}`, message: `delivery ${id} is not part of this tour` });
      seen.add(id);
    });
    const missing = current.filter((d) => !seen.has(d.id)).map((d) => d.id);
    if (missing.length) problems.push({ path: 'deliveryIds', message: `missing deliveries of the tour: ${missing.join(', ')}` });
    if (problems.length) throw validation('deliveryIds must name every delivery of the tour exactly once', problems);
    if (deliveryIds.length === 0) return { tourId, deliveryIds };
    // Kept apart from the order itself, which may happen to equal the ERP's now or after a re-sync.
    await tx
      .update(tours)
      .set({ orderedByDriverAt: sql`now()` })
      .where(and(eq(tours.id, tourId), isNull(tours.orderedByDriverAt)));

    const position = sql`CASE ${deliveries.id} ${sql.join(
      deliveryIds.map((id, i) => sql`WHEN ${id}::uuid THEN ${i}::integer`),
      sql` `,
    )} END`;
    const changed = await tx
      .update(deliveries)
      .set({ sortOrder: position, updatedAt: sql`now()` })
      // Only the locked deliveries: one a re-sync added since has no place in this order (and keeps its own).
      .where(
        and(eq(deliveries.tourId, tourId), inArray(deliveries.id, deliveryIds), sql`${deliveries.sortOrder} IS DISTINCT FROM ${position}`),
      )
      .returning();
    if (changed.length) {
      const items = await tx
        .select()
        .from(deliveryItems)
        .where(
          inArray(
            deliveryItems.deliveryId,
            changed.map((d) => d.id),
          ),
        );
      const itemsOf = (id: string): ItemRow[] => items.filter((i) => i.deliveryId === id);
      await recordChanges(
        tx,
        changed.map((d) => ({
          entity: 'delivery',
          op: 'upsert' as const,
          id: d.id,
          tourId,
          accountId,
          data: toDelivery(d, itemsOf(d.id)),
        })),
      );
    }
    return { tourId, deliveryIds };
  });
}
