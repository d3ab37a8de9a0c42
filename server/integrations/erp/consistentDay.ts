import { isDeepStrictEqual } from 'node:util';
import { deliveryKey, type SyncTourRequest } from '../../../shared/schemas/tours.js';

type Delivery = SyncTourRequest['deliveries'][number];
type Position = Delivery['positions'][number];
type Warehouse = NonNullable<Position['warehouse']>;

/**
 * One day's ERP answer made consistent with itself before its tours are written, each in a
 * transaction of its own. An answer that describes an article, customer or warehouse differently
 * in two tours would otherwise have each tour overwrite the other's version on every import, and
 * a document listed in two tours would move between their drivers every time (clearing the
 * assigned car). So the last description of each master record counts for the whole day, a
 * document stays in the first tour that lists it, and the tours of one driver and date are one
 * tour (its identity), with the last name. `conflicts` says what was evened out, for the log.
 */
export function consistentDay(answer: SyncTourRequest[]): { tours: SyncTourRequest[]; conflicts: string[] } {
  const conflicts = new Set<string>();
  const byIdentity = new Map<string, SyncTourRequest>();
  for (const tour of answer) {
    const key = `${tour.driver.personalnummer}/${tour.tourDate}`;
    const known = byIdentity.get(key);
    if (known)
      conflicts.add(`the tour of driver ${tour.driver.personalnummer} on ${tour.tourDate} is listed more than once; its lists go together`);
    byIdentity.set(key, known ? { ...tour, name: tour.name ?? known.name, deliveries: [...known.deliveries, ...tour.deliveries] } : tour);
  }
  const tours = [...byIdentity.values()];
  const lastOf = <T>(items: T[], keyOf: (item: T) => string | number, what: string) => {
    const last = new Map<string | number, T>();
    for (const item of items) {
      const key = keyOf(item);
      const known = last.get(key);
      if (known !== undefined && !isDeepStrictEqual(known, item)) conflicts.add(`${what} ${key} is described differently`);
      last.set(key, item);
    }
    return last;
  };
  const deliveriesIn = tours.flatMap((t) => t.deliveries);
  const positionsIn = deliveriesIn.flatMap((d) => d.positions);
  const warehouses = lastOf(
    positionsIn.flatMap((p) => [p.article.defaultWarehouse, p.warehouse]).filter((w): w is Warehouse => !!w),
    (w) => w.code,
    'warehouse',
  );
  const warehouse = (w: Warehouse | null | undefined) => (w ? warehouses.get(w.code)! : w);
  const articles = lastOf(
    positionsIn.map((p) => ({ ...p.article, defaultWarehouse: warehouse(p.article.defaultWarehouse) })),
    (a) => a.articleNumber,
    'article',
  );
  const customers = lastOf(
    deliveriesIn.map((d) => d.customer),
    (c) => c.erpCustomerId,
    'customer',
  );

  // The first listing of each document counts; later ones, in another tour or the same, are dropped.
  const firstListing = new Map<string, Delivery>();
  for (const tour of tours) {
    for (const d of tour.deliveries) {
      const key = deliveryKey(d);
      if (!firstListing.has(key)) firstListing.set(key, d);
      else conflicts.add(`document ${key} is listed more than once; its first listing counts`);
    }
  }
  const consistent = tours.map((tour) => ({
    ...tour,
    deliveries: tour.deliveries
      .filter((d) => firstListing.get(deliveryKey(d)) === d)
      .map((d) => ({
        ...d,
        customer: customers.get(d.customer.erpCustomerId)!,
        positions: d.positions.map((p) => ({ ...p, article: articles.get(p.article.articleNumber)!, warehouse: warehouse(p.warehouse) })),
      })),
  }));
  return { tours: consistent, conflicts: [...conflicts] };
}
