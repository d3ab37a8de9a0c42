import { asc, eq, inArray, sql } from 'drizzle-orm';
import type { AdminToursResponse } from '../../shared/schemas/adminTours.js';
import type { Db } from '../db/client.js';
import { accounts, deliveries, deliveryItems, tours } from '../db/schema.js';

const countWhere = (condition: ReturnType<typeof sql>) => sql<number>`count(*) FILTER (WHERE ${condition})`.mapWith(Number);

/** Every tour of a day with its deliveries by state and its lines by progress: three queries, whatever the day's size. */
export async function toursOfDay(db: Db, date: string): Promise<AdminToursResponse> {
  const tourRows = await db
    .select({
      id: tours.id,
      tourDate: tours.tourDate,
      name: tours.name,
      personalnummer: accounts.personalnummer,
      driverName: accounts.name,
    })
    .from(tours)
    .innerJoin(accounts, eq(accounts.personalnummer, tours.accountId))
    .where(eq(tours.tourDate, date))
    .orderBy(asc(accounts.name), asc(tours.id));
  const ids = tourRows.map((t) => t.id);
  if (ids.length === 0) return { date, tours: [] };
  const [byDelivery, byLine] = await Promise.all([
    db
      .select({
        tourId: deliveries.tourId,
        total: sql<number>`count(*)`.mapWith(Number),
        active: countWhere(sql`${deliveries.state} = 'active'`),
        held: countWhere(sql`${deliveries.state} = 'held'`),
        canceled: countWhere(sql`${deliveries.state} = 'canceled'`),
        completed: countWhere(sql`${deliveries.state} = 'completed'`),
      })
      .from(deliveries)
      .where(inArray(deliveries.tourId, ids))
      .groupBy(deliveries.tourId),
    db
      .select({
        tourId: deliveries.tourId,
        total: sql<number>`count(*)`.mapWith(Number),
        loaded: countWhere(sql`${deliveryItems.state} = 'Done'`),
        removed: countWhere(sql`${deliveryItems.state} = 'Removed'`),
        held: countWhere(sql`${deliveryItems.state} = 'Held'`),
      })
      .from(deliveryItems)
      .innerJoin(deliveries, eq(deliveries.id, deliveryItems.deliveryId))
      .where(inArray(deliveries.tourId, ids))
      .groupBy(deliveries.tourId),
  ]);
  const deliveriesOf = new Map(byDelivery.map(({ tourId, ...counts }) => [tourId, counts]));
  const linesOf = new Map(byLine.map(({ tourId, ...counts }) => [tourId, counts]));
  return {
    date,
    tours: tourRows.map((t) => ({
      id: t.id,
      tour_date: t.tourDate,
      name: t.name,
      driver: { personalnummer: t.personalnummer, name: t.driverName },
      deliveries: deliveriesOf.get(t.id) ?? { total: 0, active: 0, held: 0, canceled: 0, completed: 0 },
      lines: linesOf.get(t.id) ?? { total: 0, loaded: 0, removed: 0, held: 0 },
    })),
  };
}
