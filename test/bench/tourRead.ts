import type { Db } from '../../server/db/client.js';
import { notes } from '../../server/db/schema.js';
import { addContact, newTour } from '../helpers/factories.js';
import { problem, reportErrors, runLoad, withServer, type BenchContext, type Metrics } from './context.js';
import { request, requestJson } from './http.js';
import { settle } from './seed.js';
import { latencies } from './stats.js';
import { BENCH_ADMIN_KEY } from './target.js';

/** The lines of every delivery of a read tour: one in five not scannable, 1 to 6 pieces each. */
export const readTourPositions = (count: number) =>
  Array.from({ length: count }, (_, i) => ({
    scannable: i % 5 !== 4,
    quantity: 1 + (i % 6),
    state: 'InProgress' as const,
    scannedQuantity: 0,
  }));

/** A tour as a driver reads it: two notes and four contacts (with channels) per delivery. */
export function seedReadTour(db: Db, accountId: number, size: { deliveries: number; positions: number }) {
  const positions = readTourPositions(size.positions);
  return db.transaction(async (tx) => {
    const created = await newTour(tx, { accountId, deliveries: size.deliveries, positions, openAmountCents: 4200 });
    for (const { delivery } of created.deliveries) {
      await tx.insert(notes).values([
        { deliveryId: delivery.id, text: 'Bitte Hintereingang benutzen' },
        { deliveryId: delivery.id, text: 'Leergut mitnehmen' },
      ]);
      await addContact(
        tx,
        delivery.id,
        { role: 'header', name1: 'Gasthaus Krone', channels: [{ kind: 'phone', value: '030 1234567' }] },
        1,
      );
      await addContact(tx, delivery.id, { role: 'delivery', name1: 'Gasthaus Krone, Küche' }, 2);
      await addContact(
        tx,
        delivery.id,
        {
          role: 'contact_person',
          name1: 'Erika Mustermann',
          address: null,
          channels: [
            { kind: 'mobile', value: '0171 1234567' },
            { kind: 'email', value: 'erika@example.de' },
          ],
        },
        3,
      );
      await addContact(tx, delivery.id, { role: 'billing', name1: 'Krone GmbH', channels: [] }, 4);
    }
    return created;
  });
}

/**
 * One tour of 40 deliveries × 20 lines, two notes and four contacts (with channels) per delivery,
 * read again and again; then read after each of as many changes (a note added).
 */
export async function tourRead(ctx: BenchContext): Promise<Metrics> {
  const size = ctx.sizes.tourRead;
  const target = await ctx.newTarget('tour_read');
  return withServer(target, async (server) => {
    const { db } = server.ctx.database;
    const tour = await seedReadTour(db, 80_001, size);
    const { accessToken } = await requestJson<{ accessToken: string }>('POST', `${server.url}/dev/token`, {
      admin: BENCH_ADMIN_KEY,
      body: { personalnummer: 80_001 },
    });
    await settle(db);
    const measured = await runLoad({
      kind: 'tour_read',
      url: server.url,
      token: accessToken,
      tourId: tour.tour.id,
      iterations: size.iterations,
      warmup: size.warmup,
      changeDeliveryId: tour.deliveries[0].delivery.id,
    });
    reportErrors(ctx, 'tour_read', measured);
    const before = server.ctx.database.queries.count;
    const reply = await request('GET', `${server.url}/tours/${tour.tour.id}`, { token: accessToken });
    const queries = server.ctx.database.queries.count - before;
    if (reply.status !== 200) problem(ctx, `tour_read: ${reply.status} ${reply.text.slice(0, 200)}`);
    const changed = latencies(measured.changedLatencies!);
    return { ...latencies(measured.latencies), changed_p50_ms: changed.p50_ms, changed_p99_ms: changed.p99_ms, queries };
  });
}
