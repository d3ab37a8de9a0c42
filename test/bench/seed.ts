import { sql } from 'drizzle-orm';
import type { Db } from '../../server/db/client.js';
import type { RunningServer } from '../../server/server.js';
import { newTour, type NewPosition } from '../helpers/factories.js';
import { requestJson } from './http.js';

export interface Driver {
  personalnummer: number;
  token: string;
  tourId: string;
  deliveries: { id: string; items: string[] }[];
}

/** Lines that can be scanned for a long time: every scan of a run is applied, none rejected. */
export const openLines = (count: number): NewPosition[] =>
  Array.from({ length: count }, () => ({ scannable: true, quantity: 1_000_000, scannedQuantity: 0, state: 'InProgress' as const }));

/** Statistics as autovacuum keeps them on a database in use; tables read seconds after their rows arrived have none. */
export async function settle(db: Db) {
  await db.execute(sql`ANALYZE`);
}

/** Drivers with one tour each, inserted directly (one transaction per tour), and a token each. */
export async function seedDrivers(
  server: RunningServer,
  options: { first: number; count: number; deliveries: number; positions: number; tourDate?: string },
): Promise<Driver[]> {
  const { db } = server.ctx.database;
  const drivers: Driver[] = [];
  for (let n = 0; n < options.count; n++) {
    const personalnummer = options.first + n;
    const tour = await db.transaction((tx) =>
      newTour(tx, {
        accountId: personalnummer,
        deliveries: options.deliveries,
        positions: openLines(options.positions),
        tourDate: options.tourDate ?? '2026-06-01',
      }),
    );
    const { accessToken } = await requestJson<{ accessToken: string }>('POST', `${server.url}/dev/token`, {
      admin: server.adminKey,
      body: { personalnummer },
    });
    drivers.push({
      personalnummer,
      token: accessToken,
      tourId: tour.tour.id,
      deliveries: tour.deliveries.map((d) => ({ id: d.delivery.id, items: d.items.map((i) => i.id) })),
    });
  }
  await settle(db);
  return drivers;
}
