import { and, asc, eq, isNotNull, isNull, sql, type SQL } from 'drizzle-orm';
import type { CompletedDeliveryItem } from '../../shared/schemas/admin.js';
import type { Db } from '../db/client.js';
import { customers, deliveries, tours } from '../db/schema.js';
import { berlinDay, deliveryModifiedSql, iso, isoOrNull } from './adminShapes.js';

/** Inclusive bounds on the Berlin calendar day of the completion; null is open. */
export interface DayRange { from: string | null; to: string | null }

const completedDay = berlinDay(deliveries.completedAt);

/**
 * The same as comparing `completedDay` with the bounds, written as a range on `completed_at`
 * so that its index serves: a Berlin day runs from its local midnight to the next one (23 or
 * 25 hours on the days the clocks change).
 */
function completedWithin(range: DayRange): SQL[] {
  const midnight = (day: SQL) => sql`((${day})::timestamp AT TIME ZONE 'Europe/Berlin')`;
  return [
    eq(deliveries.state, 'completed'),
    isNotNull(deliveries.completedAt),
    ...(range.from ? [sql`${deliveries.completedAt} >= ${midnight(sql`${range.from}::date`)}`] : []),
    ...(range.to ? [sql`${deliveries.completedAt} < ${midnight(sql`${range.to}::date + 1`)}`] : []),
  ];
}

export async function completedDeliveries(db: Db, range: DayRange): Promise<CompletedDeliveryItem[]> {
  const rows = await db.select({
    belegnummer: deliveries.belegnummer,
    positionsModified: deliveryModifiedSql,
    deliveryId: deliveries.id,
    belegartId: deliveries.belegartId,
    completedAt: deliveries.completedAt,
    completedDay: sql<string>`to_char(${completedDay}, 'YYYY-MM-DD')`,
    tourDate: tours.tourDate,
    driverPersonalnummer: tours.accountId,
    customerName: customers.name,
    mailSentAt: deliveries.mailSentAt,
  }).from(deliveries)
    .innerJoin(tours, eq(tours.id, deliveries.tourId))
    .innerJoin(customers, eq(customers.id, deliveries.customerId))
    .where(and(...completedWithin(range)))
    .orderBy(asc(deliveries.completedAt), asc(deliveries.belegnummer), asc(deliveries.belegartId));
  return rows.map((r) => ({
    belegnummer: r.belegnummer,
    positions_modified: r.positionsModified,
    delivery_id: r.deliveryId,
    belegart_id: r.belegartId,
    completed_at: iso(r.completedAt!),
    completed_day: r.completedDay,
    tour_date: r.tourDate,
    driver_personalnummer: r.driverPersonalnummer,
    customer_name: r.customerName,
    mail_sent_at: isoOrNull(r.mailSentAt),
  }));
}

/** Numbers of completed deliveries whose mail is still open, each once, by earliest completion. */
export async function deliveredBelegnummern(db: Db, day: string | null): Promise<string[]> {
  const rows = await db.select({ belegnummer: deliveries.belegnummer }).from(deliveries)
    .where(and(...completedWithin({ from: day, to: day }), isNull(deliveries.mailSentAt)))
    .groupBy(deliveries.belegnummer)
    .orderBy(sql`min(${deliveries.completedAt})`, asc(deliveries.belegnummer));
  return rows.map((r) => r.belegnummer);
}
