import { asc, eq } from 'drizzle-orm';
import type { ReviewHistoryResponse } from '../../shared/schemas/reviews.js';
import type { Db } from '../db/client.js';
import { deliveries, reviewResolutions } from '../db/schema.js';
import { notFound } from '../errors.js';
import { iso, isoOrNull } from './adminShapes.js';

/** Every confirmation of a delivery's review, oldest first: who (name, and subject when by token), which change, when. */
export async function reviewHistory(db: Db, deliveryId: string): Promise<ReviewHistoryResponse> {
  const [delivery] = await db.select({ belegnummer: deliveries.belegnummer }).from(deliveries).where(eq(deliveries.id, deliveryId));
  if (!delivery) throw notFound('Delivery');
  const rows = await db
    .select()
    .from(reviewResolutions)
    .where(eq(reviewResolutions.deliveryId, deliveryId))
    .orderBy(asc(reviewResolutions.resolvedAt), asc(reviewResolutions.id));
  return {
    delivery_id: deliveryId,
    belegnummer: delivery.belegnummer,
    resolutions: rows.map((r) => ({
      processor: r.processor,
      processor_subject: r.processorSubject,
      authenticated_by: r.processorSubject === null ? 'admin_key' : 'back_office_token',
      resolved_at: iso(r.resolvedAt),
      confirmed_change_at: isoOrNull(r.confirmedChangeAt),
    })),
  };
}
