import { randomUUID } from 'node:crypto';
import { and, eq, inArray } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { articles, contactChannels, customers, deliveries, deliveryItems, notes, tours, warehouses } from '../../server/db/schema.js';
import { createTourReader } from '../../server/queries/renderedTours.js';
import { berlinDate } from '../../shared/rules/calendar.js';
import { databaseKinds } from '../helpers/databases.js';
import { addContact, newTour } from '../helpers/factories.js';
import { tourChecks } from '../helpers/tourChecks.js';
import { useTestServer } from '../helpers/server.js';
import { tourPayload } from '../helpers/tourPayloads.js';
import { inProcess } from '../helpers/target.js';

describe.each(databaseKinds)('tour reads on %s', (kind) => {
  const api = useTestServer(kind);

  const { nextPersonalnummer, driver, maxSeq, changesSince, details } = tourChecks(api, 5600);

  describe('GET /me/tours', () => {
    it('lists the tours of the day with delivery states and loading progress', async () => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer, { date: '2026-05-04', deliveries: 3, positions: 3 });
      const tourId = (await api.post('/sync/tour', payload, { token })).body.tour.id;
      const [d1, d2, d3] = (await details(tourId, token)).deliveries;
      await api.db.update(deliveryItems).set({ state: 'Done', scannedQuantity: 3 }).where(eq(deliveryItems.id, d1.positions[0].id));
      await api.db.update(deliveryItems).set({ state: 'Removed' }).where(eq(deliveryItems.id, d1.positions[1].id));
      await api.post(`/deliveries/${d2.id}/hold`, { reason: 'Kunde nicht da' }, { token });
      await api.post(`/deliveries/${d3.id}/cancel`, { reason: 'Storniert' }, { token });

      const response = await api.get('/me/tours?date=2026-05-04', { token });
      expect(response.status).toBe(200);
      expect(response.body.tours).toEqual([
        {
          id: tourId,
          accountId: personalnummer,
          tourDate: '2026-05-04',
          name: 'Tour Mitte',
          deliveryCount: 3,
          deliveriesByState: { active: 1, held: 1, canceled: 1, completed: 0 },
          // Two scannable lines per delivery; the canceled delivery's lines are not loaded.
          positionsToLoad: 3,
          positionsLoaded: 1,
        },
      ]);
      expect((await api.get('/me/tours?date=2026-05-05', { token })).body.tours).toEqual([]);
    });

    it('defaults to today in Berlin', async () => {
      const { personalnummer, token } = await driver();
      const today = berlinDate(new Date());
      await api.post('/sync/tour', tourPayload(personalnummer, { date: today }), { token });
      const response = await api.get('/me/tours', { token });
      expect(response.body.tours.map((t: { tourDate: string }) => t.tourDate)).toEqual([today]);
    });

    it.each(['2026-13-01', '04.05.2026', 'today', '2026-02-29'])('refuses the date %s with 400', async (date) => {
      const { token } = await driver();
      const response = await api.get(`/me/tours?date=${encodeURIComponent(date)}`, { token });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation');
    });

    it('shows no tour of another driver', async () => {
      const a = await driver();
      const b = await driver();
      await api.post('/sync/tour', tourPayload(a.personalnummer, { date: '2026-05-06' }), { token: a.token });
      expect((await api.get('/me/tours?date=2026-05-06', { token: b.token })).body.tours).toEqual([]);
    });
  });

  describe('GET /tours/{tour_id}', () => {
    inProcess.it('reads a tour of 40 deliveries with 20 positions each in a fixed number of queries', async () => {
      const { personalnummer, token } = await driver();
      const small = (
        await api.post('/sync/tour', tourPayload(personalnummer, { date: '2026-06-01', deliveries: 1, positions: 1 }), { token })
      ).body.tour.id;
      const large = (
        await api.post('/sync/tour', tourPayload(personalnummer, { date: '2026-06-02', deliveries: 40, positions: 20 }), { token })
      ).body.tour.id;
      const queriesFor = async (tourId: string) => {
        const { statements, result } = await api.statementsOf(() => details(tourId, token));
        return { queries: statements, body: result };
      };
      const one = await queriesFor(small);
      const forty = await queriesFor(large);
      expect(forty.body.deliveries).toHaveLength(40);
      expect(forty.body.deliveries.flatMap((d: { positions: unknown[] }) => d.positions)).toHaveLength(800);
      expect(forty.queries).toBe(one.queries);
      // One for authentication, one for the tour with everything in it.
      expect(forty.queries).toBe(2);
    });

    it('includes notes with their image attachment id, service values, credit and the latest payment', async () => {
      const { personalnummer, token } = await driver();
      const code = `BAR-${nextPersonalnummer()}`;
      const method = (await api.post('/payment-methods', { code, name: 'Bar', collectOnSite: true }, { token })).body.paymentMethod;
      const payload = tourPayload(personalnummer, { deliveries: 1, paymentMethodCode: code });
      const tourId = (await api.post('/sync/tour', payload, { token })).body.tour.id;
      const d = (await details(tourId, token)).deliveries[0];
      await api.post(`/deliveries/${d.id}/notes`, { text: 'Bitte klingeln' }, { token });
      const service = (
        await api.post(
          '/services',
          { key: `stufen-${nextPersonalnummer()}`, name: 'Stufen', kind: 'numeric', minValue: 0, maxValue: 10 },
          { token },
        )
      ).body.service;
      expect((await api.put(`/deliveries/${d.id}/services/${service.id}`, { numericValue: 4 }, { token })).status).toBe(200);
      expect(
        (
          await api.post(
            `/deliveries/${d.id}/credit`,
            { clientEventId: randomUUID(), action: 'set', amountCents: 1000, reason: 'Bruch' },
            { token },
          )
        ).status,
      ).toBe(200);
      const paid = await api.post(
        `/deliveries/${d.id}/payment`,
        { clientEventId: randomUUID(), expectedAmountCents: 500, paymentMethodId: method.id },
        { token },
      );
      expect(paid.status).toBe(200);

      const after = (await details(tourId, token)).deliveries[0];
      expect(after.notes).toMatchObject([{ text: 'Bitte klingeln', imageAttachmentId: null }]);
      expect(after.serviceValues).toMatchObject([{ serviceId: service.id, numericValue: 4 }]);
      expect(after.credit).toMatchObject({ amountCents: 1000, reason: 'Bruch' });
      expect(after.latestPayment).toMatchObject({ paymentMethodId: method.id, amountCents: 500, paymentMethodCode: code });
      // A logged payment settles the collection duty; the open amount itself only drops by credits.
      expect(after.openAmountCents).toBe(500);
      expect(after.paymentMethodId).toBe(method.id);
    });

    it('answers an unchanged tour with the same ETag, 304 to If-None-Match, and every change with a new one', async () => {
      const { personalnummer, token } = await driver();
      const tour = await newTour(api.db, {
        accountId: personalnummer,
        positions: [{ scannable: true, quantity: 3, scannedQuantity: 0, state: 'InProgress' }],
      });
      const {
        delivery,
        items: [item],
      } = tour.deliveries[0];
      const source = await addContact(api.db, delivery.id, { role: 'contact_person', channels: [{ kind: 'phone', value: '030 111' }] });
      const [note] = await api.db.insert(notes).values({ deliveryId: delivery.id, text: 'Hoftor' }).returning();
      const [warehouse] = await api.db
        .insert(warehouses)
        .values({ code: `W-${personalnummer}`, name: 'Lager' })
        .returning();
      await api.db.update(deliveryItems).set({ warehouseId: warehouse.id }).where(eq(deliveryItems.id, item.id));
      const path = `/tours/${tour.tour.id}`;

      const first = await api.get(path, { token });
      const etag = first.headers.get('etag')!;
      expect(etag).toMatch(/^"[^"]+"$/);
      const again = await api.get(path, { token });
      expect(again.text).toBe(first.text);
      expect(again.headers.get('etag')).toBe(etag);
      const notModified = await api.get(path, { token, headers: { 'if-none-match': etag } });
      expect(notModified.status).toBe(304);
      expect(notModified.text).toBe('');

      // Each change below touches another table the answer is made of (shared master data
      // included); each must show at once, with a new ETag.
      const seen = new Set([etag]);
      const changes: [string, () => Promise<unknown>, (body: any) => unknown, unknown][] = [
        [
          'scan',
          () =>
            api.post(
              '/scans',
              { scans: [{ clientScanId: randomUUID(), deliveryItemId: item.id, action: 'scan', occurredAt: new Date().toISOString() }] },
              { token },
            ),
          (body) => body.deliveries[0].positions[0].scannedQuantity,
          1,
        ],
        [
          'article',
          () => api.db.update(articles).set({ name: 'Umbenannt' }).where(eq(articles.id, item.articleId)),
          (body) => body.articles[0].name,
          'Umbenannt',
        ],
        [
          'warehouse',
          () => api.db.update(warehouses).set({ name: 'Neues Lager' }).where(eq(warehouses.id, warehouse.id)),
          (body) => body.warehouses[0].name,
          'Neues Lager',
        ],
        [
          'customer',
          () => api.db.update(customers).set({ name: 'Neuer Kunde' }).where(eq(customers.id, tour.customer.id)),
          (body) => body.customers[0].name,
          'Neuer Kunde',
        ],
        [
          'channel',
          () => api.db.update(contactChannels).set({ value: '030 222' }).where(eq(contactChannels.sourceId, source.id)),
          (body) => body.deliveries[0].contacts[0].channels[0].value,
          '030 222',
        ],
        ['note removed', () => api.db.delete(notes).where(eq(notes.id, note.id)), (body) => body.deliveries[0].notes.length, 0],
        [
          'tour',
          () => api.db.update(tours).set({ name: 'Tour Süd' }).where(eq(tours.id, tour.tour.id)),
          (body) => body.tour.name,
          'Tour Süd',
        ],
      ];
      for (const [what, change, read, expected] of changes) {
        await change();
        const response = await api.get(path, { token, headers: { 'if-none-match': [...seen].join(', ') } });
        expect({ what, status: response.status, value: read(response.body) }).toEqual({ what, status: 200, value: expected });
        const next = response.headers.get('etag')!;
        expect(seen.has(next), what).toBe(false);
        seen.add(next);
      }
      const other = await driver();
      expect((await api.get(path, { token: other.token })).status).toBe(404);
    });

    it('keeps rendered tours within the configured bytes, least recently read dropped first', async () => {
      const { personalnummer } = await driver();
      const a = await newTour(api.db, { accountId: personalnummer, deliveries: 2, tourDate: '2026-07-01' });
      const b = await newTour(api.db, { accountId: personalnummer, deliveries: 2, tourDate: '2026-07-02' });
      const size = (await createTourReader(1e9)(api.db, a.tour.id, personalnummer)).body.length;
      const read = createTourReader(size * 1.5);
      const firstA = await read(api.db, a.tour.id, personalnummer);
      // Unchanged and kept: the very same rendering comes back.
      expect(await read(api.db, a.tour.id, personalnummer)).toBe(firstA);
      await read(api.db, b.tour.id, personalnummer);
      const secondA = await read(api.db, a.tour.id, personalnummer);
      expect(secondA).not.toBe(firstA);
      expect(secondA.body.equals(firstA.body)).toBe(true);
      expect(secondA.version).toBe(firstA.version);
      await expect(read(api.db, a.tour.id, personalnummer + 1)).rejects.toMatchObject({ code: 'not_found' });
    });

    it('answers 404 for a tour of another account and for an unknown tour, 400 for an invalid id', async () => {
      const a = await driver();
      const b = await driver();
      const tourId = (await api.post('/sync/tour', tourPayload(a.personalnummer), { token: a.token })).body.tour.id;
      const foreign = await api.get(`/tours/${tourId}`, { token: b.token });
      expect(foreign.status).toBe(404);
      expect(foreign.body.code).toBe('not_found');
      expect((await api.get(`/tours/${randomUUID()}`, { token: b.token })).status).toBe(404);
      // Ids of no RFC version or variant are well-formed ids of nothing.
      expect((await api.get('/tours/11111111-1111-1111-1111-111111111111', { token: b.token })).status).toBe(404);
      expect((await api.get('/tours/00000000-0000-0000-0000-000000000001', { token: b.token })).status).toBe(404);
      expect((await api.get(`/tours/${tourId.toUpperCase()}`, { token: a.token })).body.tour.id).toBe(tourId);
      expect((await api.get('/tours/not-a-uuid', { token: b.token })).status).toBe(400);
      expect((await api.get(`/tours/${tourId}`)).status).toBe(401);
    });
  });

  describe('PUT /tours/{tour_id}/delivery-order', () => {
    async function tourOf(deliveryCount: number) {
      const owner = await driver();
      const tourId = (
        await api.post('/sync/tour', tourPayload(owner.personalnummer, { deliveries: deliveryCount, positions: 1 }), { token: owner.token })
      ).body.tour.id;
      const ids: string[] = (await details(tourId, owner.token)).deliveries.map((d: { id: string }) => d.id);
      return { ...owner, tourId, ids, path: `/tours/${tourId}/delivery-order` };
    }

    it('sets the complete new order and records the moved deliveries', async () => {
      const { token, tourId, ids, path, personalnummer } = await tourOf(3);
      const seq = await maxSeq();
      const response = await api.put(path, { deliveryIds: [ids[1], ids[2], ids[0]] }, { token });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ tourId, deliveryIds: [ids[1], ids[2], ids[0]] });
      const after = (await details(tourId, token)).deliveries;
      expect(after.map((d: { id: string; sortOrder: number }) => [d.id, d.sortOrder])).toEqual([
        [ids[1], 0],
        [ids[2], 1],
        [ids[0], 2],
      ]);
      const changes = await changesSince(seq);
      expect(changes.map((c) => [c.entity, c.entityId, c.accountId]).sort()).toEqual(
        ids.map((id) => ['delivery', id, personalnummer]).sort(),
      );
      expect(await changesSince(await maxSeq())).toEqual([]);
      await api.put(path, { deliveryIds: [ids[1], ids[2], ids[0]] }, { token });
      expect(await changesSince(seq + changes.length)).toEqual([]);
    });

    it.each([
      ['a missing delivery', (ids: string[]) => [ids[0], ids[1]]],
      ['a duplicate delivery', (ids: string[]) => [ids[0], ids[1], ids[2], ids[0]]],
      ['a delivery of another tour', (ids: string[]) => [ids[0], ids[1], randomUUID()]],
      ['an empty list', () => []],
      ['no uuid', (ids: string[]) => [ids[0], ids[1], 'x']],
    ])('refuses %s with 400 validation and changes nothing', async (_what, order) => {
      const { token, tourId, ids, path } = await tourOf(3);
      const before = await api.db
        .select({ id: deliveries.id, sortOrder: deliveries.sortOrder })
        .from(deliveries)
        .where(eq(deliveries.tourId, tourId));
      const response = await api.put(path, { deliveryIds: order(ids) }, { token });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation');
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(
        await api.db.select({ id: deliveries.id, sortOrder: deliveries.sortOrder }).from(deliveries).where(eq(deliveries.tourId, tourId)),
      ).toEqual(before);
    });

    it('takes the empty order of a tour without deliveries', async () => {
      const { token, tourId, ids, path } = await tourOf(0);
      expect(ids).toEqual([]);
      expect(await api.put(path, { deliveryIds: [] }, { token })).toMatchObject({ status: 200, body: { tourId, deliveryIds: [] } });
    });

    it('answers 404 for a tour of another account, even with its correct ids', async () => {
      const { ids, path } = await tourOf(2);
      const other = await driver();
      const response = await api.put(path, { deliveryIds: ids }, { token: other.token });
      expect(response.status).toBe(404);
      expect((await api.put(`/tours/${randomUUID()}/delivery-order`, { deliveryIds: ids }, { token: other.token })).status).toBe(404);
    });

    it('refuses the deliveries of another tour of the same driver', async () => {
      const first = await tourOf(2);
      const second = (
        await api.post('/sync/tour', tourPayload(first.personalnummer, { date: '2026-04-15', deliveries: 1 }), { token: first.token })
      ).body.tour.id;
      const secondIds = (await details(second, first.token)).deliveries.map((d: { id: string }) => d.id);
      const response = await api.put(first.path, { deliveryIds: [...first.ids, ...secondIds] }, { token: first.token });
      expect(response.status).toBe(400);
      const rows = await api.db.select({ tourId: deliveries.tourId }).from(deliveries).where(inArray(deliveries.id, secondIds));
      expect(rows).toEqual([{ tourId: second }]);
      expect(
        await api.db
          .select()
          .from(tours)
          .where(and(eq(tours.accountId, first.personalnummer))),
      ).toHaveLength(2);
    });
  });
});
