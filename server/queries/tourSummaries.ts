import { and, asc, eq, inArray, ne, sql } from 'drizzle-orm';
import type { TourSummary } from '../../shared/schemas/tours.js';
import type { Db } from '../db/client.js';
import { articles, deliveries, deliveryItems, tours } from '../db/schema.js';
import { toTour } from '../shapes/rows.js';

const count = (condition?: ReturnType<typeof sql>) =>
  condition ? sql<number>`count(*) FILTER (WHERE ${condition})::int` : sql<number>`count(*)::int`;

/**
 * The driver's tours of a day with what the start screen counts: deliveries by state, and the
 * scannable positions to load (not removed) and loaded (done). Positions of canceled deliveries
 * are not loaded, so they count in neither. Three queries, whatever the number of tours.
 */
export async function listTourSummaries(db: Db, accountId: number, date: string): Promise<TourSummary[]> {
  const tourRows = await db
    .select()
    .from(tours)
    .where(and(eq(tours.accountId, accountId), eq(tours.tourDate, date)))
    .orderBy(asc(tours.createdAt));
  if (tourRows.length === 0) return [];
  const ids = tourRows.map((t) => t.id);
  const [stateRows, loadRows] = await Promise.all([
    db
      .select({ tourId: deliveries.tourId, state: deliveries.state, n: count() })
      .from(deliveries)
      .where(inArray(deliveries.tourId, ids))
      .groupBy(deliveries.tourId, deliveries.state),
    db
      .select({
        tourId: deliveries.tourId,
        toLoad: count(sql`${deliveryItems.state} <> 'Removed'`),
        loaded: count(sql`${deliveryItems.state} = 'Done'`),
      })
      .from(deliveryItems)
      .innerJoin(deliveries, eq(deliveries.id, deliveryItems.deliveryId))
      .innerJoin(articles, eq(articles.id, deliveryItems.articleId))
      .where(and(inArray(deliveries.tourId, ids), eq(articles.scannable, true), ne(deliveries.state, 'canceled')))
      .groupBy(deliveries.tourId),
  ]);
  return tourRows.map((tour) => {
    const byState = { active: 0, held: 0, canceled: 0, completed: 0 };
    for (const row of stateRows) if (row.tourId === tour.id) byState[row.state] = row.n;
    const load = loadRows.find((row) => row.tourId === tour.id);
    return {
      ...toTour(tour),
      deliveryCount: byState.active + byState.held + byState.canceled + byState.completed,
      deliveriesByState: byState,
      positionsToLoad: load?.toLoad ?? 0,
      positionsLoaded: load?.loaded ?? 0,
    };
  });
}
