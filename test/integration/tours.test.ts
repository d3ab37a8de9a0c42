import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { accounts, deliveries, deliveryItems, paymentMethods, tours } from '../../server/db/schema.js';
import { databaseKinds } from '../helpers/databases.js';
import { tourChecks } from '../helpers/tourChecks.js';
import { SYNC_ROLE, useTestServer } from '../helpers/server.js';
import { copy, delivery, position, tourPayload } from '../helpers/tourPayloads.js';

describe.each(databaseKinds)('tours on %s', (kind) => {
  const api = useTestServer(kind);

  const { nextPersonalnummer, driver, changeCount, maxSeq, changesSince, details } = tourChecks(api, 5100);

  describe('POST /sync/tour', () => {
    it('lands tours of several drivers sent at the same moment with new master data they share', async () => {
      const drivers = await Promise.all(Array.from({ length: 4 }, () => driver()));
      const articleNumber = `T-SHARED-${randomUUID().slice(0, 8)}`;
      const shared = {
        articleNumber,
        name: 'Gemeinsamer Artikel',
        scannable: true,
        defaultWarehouse: { code: `W-${articleNumber}`, name: 'Neues Lager' },
      };
      const payloads = drivers.map(({ personalnummer }) => {
        const payload = tourPayload(personalnummer, { deliveries: 2, positions: 2 });
        for (const d of payload.deliveries) d.positions[0] = position(10, { article: shared, warehouse: shared.defaultWarehouse });
        return payload;
      });
      const responses = await Promise.all(payloads.map((payload, n) => api.post('/sync/tour', payload, { token: drivers[n].token })));
      expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      const lines = await Promise.all(
        responses.map(async (r, n) => (await details(r.body.tour.id, drivers[n].token)).deliveries[0].positions[0]),
      );
      expect(new Set(lines.map((line) => line.articleId)).size).toBe(1);
      expect(new Set(lines.map((line) => line.warehouseId)).size).toBe(1);
    });

    it('creates the tour with deliveries, positions, merged contacts and master data', async () => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer, { deliveries: 2, positions: 3 });
      const response = await api.post('/sync/tour', payload, { token });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({
        created: true,
        tour: { accountId: personalnummer, tourDate: '2026-04-14', name: 'Tour Mitte' },
        deliveries: { created: 2, updated: 0, unchanged: 0, moved: 0 },
        positions: { created: 6, updated: 0, deleted: 0 },
      });

      const tour = await details(response.body.tour.id, token);
      expect(tour.deliveries.map((d: { belegnummer: string }) => d.belegnummer)).toEqual(payload.deliveries.map((d) => d.belegnummer));
      const first = tour.deliveries[0];
      expect(
        first.positions.map((p: { lineNumber: number; state: string; requiredQuantity: number; scannable: boolean }) => [
          p.lineNumber,
          p.state,
          p.requiredQuantity,
          p.scannable,
        ]),
      ).toEqual([
        [10, 'InProgress', 3, true],
        [20, 'InProgress', 3, true],
        [30, 'InProgress', 1 * 3, false],
      ]);
      expect(first.contacts.map((c: { role: string; roles: string[]; position: number }) => [c.role, c.roles, c.position])).toEqual([
        ['header', ['header', 'delivery'], 1],
        ['contact_person', ['contact_person'], 2],
      ]);
      expect(first.contacts[0].channels).toMatchObject([{ kind: 'phone', position: 1, value: '030 1234567' }]);
      expect(tour.customers.map((c: { erpCustomerId: number }) => c.erpCustomerId).sort()).toEqual(
        payload.deliveries.map((d) => d.customer.erpCustomerId).sort(),
      );
      expect(tour.articles.map((a: { articleNumber: string }) => a.articleNumber)).toEqual(['T-100010', 'T-100020', 'T-900001']);
      expect(tour.warehouses).toMatchObject([{ code: 'T-HL', name: 'Testlager' }]);
      expect(first).toMatchObject({
        erpOpenAmountCents: 1500,
        openAmountCents: 1500,
        state: 'active',
        sortOrder: 10,
        credit: null,
        latestPayment: null,
      });
    });

    it('writes nothing and records no change when the identical tour is sent again', async () => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer, { deliveries: 3, positions: 4 });
      const first = await api.post('/sync/tour', payload, { token });
      const stamps = await api.db
        .select({ id: deliveries.id, updatedAt: deliveries.updatedAt })
        .from(deliveries)
        .where(eq(deliveries.tourId, first.body.tour.id));
      const [tourBefore] = await api.db.select().from(tours).where(eq(tours.id, first.body.tour.id));
      const before = await changeCount();

      const again = await api.post('/sync/tour', copy(payload), { token });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({
        created: false,
        deliveries: { created: 0, updated: 0, unchanged: 3, moved: 0 },
        positions: { created: 0, updated: 0, deleted: 0 },
      });
      expect(await changeCount()).toBe(before);
      expect(
        await api.db
          .select({ id: deliveries.id, updatedAt: deliveries.updatedAt })
          .from(deliveries)
          .where(eq(deliveries.tourId, first.body.tour.id)),
      ).toEqual(stamps);
      expect((await api.db.select().from(tours).where(eq(tours.id, first.body.tour.id)))[0].updatedAt).toEqual(tourBefore.updatedAt);
      const ids = (await details(first.body.tour.id, token)).deliveries.flatMap((d: { contacts: { id: string }[] }) =>
        d.contacts.map((c) => c.id),
      );
      const idsAgain = (await details(again.body.tour.id, token)).deliveries.flatMap((d: { contacts: { id: string }[] }) =>
        d.contacts.map((c) => c.id),
      );
      expect(idsAgain).toEqual(ids);
    });

    it('updates changed master data and contacts but keeps the delivery address snapshot', async () => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer, { deliveries: 1, positions: 2 });
      const first = await api.post('/sync/tour', payload, { token });
      const seq = await maxSeq();

      const changed = copy(payload);
      const d = changed.deliveries[0];
      d.customer.name = 'Neuer Kundenname GmbH';
      d.customer.address = { ...d.customer.address, street: 'Neue Straße' };
      d.deliveryAddress = { ...d.deliveryAddress, street: 'Andere Lieferstraße' };
      d.positions[0].article.name = 'Testartikel umbenannt';
      for (const p of d.positions) {
        if (p.warehouse) p.warehouse = { code: 'T-HL', name: 'Testlager umbenannt' };
        if (p.article.defaultWarehouse) p.article.defaultWarehouse = { code: 'T-HL', name: 'Testlager umbenannt' };
      }
      d.contacts = [
        ...(d.contacts ?? []),
        { role: 'billing', name1: 'Buchhaltung', address: null, channels: [{ kind: 'email', position: 1, value: 'rechnung@example.de' }] },
      ];
      const again = await api.post('/sync/tour', changed, { token });
      expect(again.body.deliveries).toMatchObject({ updated: 1, unchanged: 0 });

      const tour = await details(first.body.tour.id, token);
      expect(tour.deliveries[0].deliveryAddress.street).toBe(payload.deliveries[0].deliveryAddress.street);
      expect(tour.customers[0]).toMatchObject({ name: 'Neuer Kundenname GmbH', address: { street: 'Neue Straße' } });
      expect(tour.articles.find((a: { articleNumber: string }) => a.articleNumber === 'T-100010').name).toBe('Testartikel umbenannt');
      expect(tour.warehouses[0].name).toBe('Testlager umbenannt');
      expect(tour.deliveries[0].contacts.map((c: { role: string }) => c.role)).toEqual(['header', 'contact_person', 'billing']);

      const changes = await changesSince(seq);
      const kinds = changes.map((c) => `${c.entity}:${c.op}`);
      expect(kinds).toEqual(
        expect.arrayContaining(['customer:upsert', 'article:upsert', 'warehouse:upsert', 'contact:delete', 'contact:upsert']),
      );
      expect(kinds).not.toContain('delivery:upsert');
      expect(changes.filter((c) => c.accountId === personalnummer).every((c) => c.tourId === first.body.tour.id)).toBe(true);
      // Other drivers' open deliveries name the shared test article and warehouse: they hear of those only.
      expect(changes.filter((c) => c.accountId !== personalnummer).every((c) => ['article', 'warehouse'].includes(c.entity))).toBe(true);
      const customer = changes.find((c) => c.entity === 'customer')!;
      expect(customer.data).toMatchObject({ erpCustomerId: d.customer.erpCustomerId, name: 'Neuer Kundenname GmbH' });
    });

    it('keeps scans when quantities change, recomputes the line state and adds new lines', async () => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer, { deliveries: 1, positions: 2 });
      const first = await api.post('/sync/tour', payload, { token });
      const [line10, line20] = (await details(first.body.tour.id, token)).deliveries[0].positions;
      const scans = [line10, line10, line10, line20].map((p: { id: string }) => ({
        clientScanId: randomUUID(),
        deliveryItemId: p.id,
        action: 'scan',
        occurredAt: new Date().toISOString(),
      }));
      const scanned = await api.post('/scans', { scans }, { token });
      expect(scanned.body.results.map((r: { status: string }) => r.status)).toEqual(['applied', 'applied', 'applied', 'applied']);
      const seq = await maxSeq();

      const changed = copy(payload);
      changed.deliveries[0].positions[0].quantity = 5;
      changed.deliveries[0].positions[1].quantity = 1;
      changed.deliveries[0].positions.push(position(40, { quantity: 2 }));
      const response = await api.post('/sync/tour', changed, { token });
      expect(response.body.positions).toEqual({ created: 1, updated: 2, deleted: 0 });

      const positions = (await details(first.body.tour.id, token)).deliveries[0].positions;
      expect(
        positions.map((p: { lineNumber: number; requiredQuantity: number; scannedQuantity: number; state: string }) => [
          p.lineNumber,
          p.requiredQuantity,
          p.scannedQuantity,
          p.state,
        ]),
      ).toEqual([
        [10, 5, 3, 'InProgress'],
        [20, 1, 1, 'Done'],
        [40, 2, 0, 'InProgress'],
      ]);
      const changes = await changesSince(seq);
      expect(
        changes
          .filter((c) => c.entity === 'position')
          .map((c) => (c.data as { lineNumber: number }).lineNumber)
          .sort(),
      ).toEqual([10, 20, 40]);
      expect(changes.filter((c) => c.entity === 'delivery')).toHaveLength(1);
    });

    it('keeps a removed line removed and a lowered quantity below the scans as scanned', async () => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer, { deliveries: 1, positions: 2 });
      const first = await api.post('/sync/tour', payload, { token });
      const [line10, line20] = (await details(first.body.tour.id, token)).deliveries[0].positions;
      await api.db.update(deliveryItems).set({ state: 'Removed' }).where(eq(deliveryItems.id, line10.id));
      await api.db.update(deliveryItems).set({ scannedQuantity: 3, state: 'Done' }).where(eq(deliveryItems.id, line20.id));

      const changed = copy(payload);
      changed.deliveries[0].positions[0].quantity = 7;
      changed.deliveries[0].positions[1].quantity = 2;
      await api.post('/sync/tour', changed, { token });
      const positions = (await details(first.body.tour.id, token)).deliveries[0].positions;
      expect(
        positions.map((p: { requiredQuantity: number; scannedQuantity: number; state: string }) => [
          p.requiredQuantity,
          p.scannedQuantity,
          p.state,
        ]),
      ).toEqual([
        [7, 0, 'Removed'],
        [2, 3, 'Done'],
      ]);
    });

    it('keeps a line whose credits took every piece removed when the ERP raises its quantity', async () => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer, { deliveries: 1, positions: 2 });
      const tourId = (await api.post('/sync/tour', payload, { token })).body.tour.id;
      const [line] = (await details(tourId, token)).deliveries[0].positions;
      const credit = {
        clientScanId: randomUUID(),
        deliveryItemId: line.id,
        action: 'remove',
        quantity: 3,
        reason: 'Bruch',
        occurredAt: new Date().toISOString(),
      };
      expect((await api.post('/scans', { scans: [credit] }, { token })).body.results[0].item).toMatchObject({
        state: 'Removed',
        creditedQuantity: 3,
      });
      const raised = copy(payload);
      raised.deliveries[0].positions[0].quantity = 5;
      await api.post('/sync/tour', raised, { token });
      // Only unremove leaves Removed: the line stays removed, all five pieces off the open amount.
      const [delivery] = (await details(tourId, token)).deliveries;
      expect(delivery.positions[0]).toMatchObject({ requiredQuantity: 5, creditedQuantity: 3, state: 'Removed' });
      expect(delivery.openAmountCents).toBe(Math.max(0, payload.deliveries[0].openAmountCents - 5 * 250));
    });

    it('deletes lines the ERP no longer sends unless they were worked on', async () => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer, { deliveries: 1, positions: 4 });
      const first = await api.post('/sync/tour', payload, { token });
      const lines = (await details(first.body.tour.id, token)).deliveries[0].positions;
      const scan = (id: string) => ({
        clientScanId: randomUUID(),
        deliveryItemId: id,
        action: 'scan',
        occurredAt: new Date().toISOString(),
      });
      const unscan = (id: string) => ({ ...scan(id), action: 'unscan' });
      // Line 20 keeps a scan; line 40 was scanned and unscanned (history in the audit).
      await api.post('/scans', { scans: [scan(lines[1].id), scan(lines[3].id), unscan(lines[3].id)] }, { token });
      const seq = await maxSeq();

      const changed = copy(payload);
      changed.deliveries[0].positions = [changed.deliveries[0].positions[0]];
      const response = await api.post('/sync/tour', changed, { token });
      expect(response.body.positions).toEqual({ created: 0, updated: 0, deleted: 1 });
      const left = (await details(first.body.tour.id, token)).deliveries[0].positions;
      expect(left.map((p: { lineNumber: number }) => p.lineNumber)).toEqual([10, 20, 40]);
      const deletes = (await changesSince(seq)).filter((c) => c.op === 'delete');
      expect(deletes.map((c) => [c.entity, c.entityId])).toEqual([['position', lines[2].id]]);
    });

    it('tells every driver with an open delivery naming changed master data, once, and its lines when scannable flips', async () => {
      const [a, b, c] = [await driver(), await driver(), await driver()];
      const article = {
        articleNumber: `S-${a.personalnummer}`,
        name: 'Geteilter Artikel',
        scannable: true,
        defaultWarehouse: { code: `SW-${a.personalnummer}`, name: 'Lager Süd' },
      };
      const shared = (payload: ReturnType<typeof tourPayload>, customer = payload.deliveries[0].customer) => {
        payload.deliveries[0].customer = customer;
        payload.deliveries[0].positions[0] = position(10, { article, warehouse: article.defaultWarehouse });
        return payload;
      };
      const payloadA = shared(tourPayload(a.personalnummer, { deliveries: 1 }));
      const tourA = (await api.post('/sync/tour', payloadA, { token: a.token })).body.tour;
      const customer = payloadA.deliveries[0].customer;
      const payloadC = shared(tourPayload(c.personalnummer, { deliveries: 1 }), customer);
      const tourC = (await api.post('/sync/tour', payloadC, { token: c.token })).body.tour;
      // C's delivery is done: nothing left to deliver, nothing to tell.
      await api.db.update(deliveries).set({ state: 'completed' }).where(eq(deliveries.tourId, tourC.id));
      const lineA = (await details(tourA.id, a.token)).deliveries[0].positions[0];
      const seq = await maxSeq();

      const renamed = {
        ...article,
        name: 'Umbenannt',
        scannable: false,
        defaultWarehouse: { ...article.defaultWarehouse, name: 'Lager Nord' },
      };
      const payloadB = tourPayload(b.personalnummer, { deliveries: 1 });
      payloadB.deliveries[0].customer = { ...customer, name: 'Kunde neu' };
      payloadB.deliveries[0].positions[0] = position(10, { article: renamed, warehouse: renamed.defaultWarehouse });
      await api.post('/sync/tour', payloadB, { token: b.token });

      const forA = (await changesSince(seq)).filter((ch) => ch.accountId === a.personalnummer);
      expect(forA.map((ch) => `${ch.entity}:${ch.op}`).sort()).toEqual([
        'article:upsert',
        'customer:upsert',
        'position:upsert',
        'warehouse:upsert',
      ]);
      expect(forA.every((ch) => ch.tourId === tourA.id)).toBe(true);
      expect(forA.find((ch) => ch.entity === 'article')!.data).toMatchObject({ name: 'Umbenannt', scannable: false });
      expect(forA.find((ch) => ch.entity === 'customer')!.data).toMatchObject({ name: 'Kunde neu' });
      expect(forA.find((ch) => ch.entity === 'warehouse')!.data).toMatchObject({ name: 'Lager Nord' });
      expect(forA.find((ch) => ch.entity === 'position')).toMatchObject({ entityId: lineA.id, data: { scannable: false } });
      expect((await changesSince(seq)).some((ch) => ch.accountId === c.personalnummer)).toBe(false);

      // The same again changes nothing, for anyone.
      const settled = await maxSeq();
      await api.post('/sync/tour', copy(payloadB), { token: b.token });
      expect(await maxSeq()).toBe(settled);
    });

    it("gives a driver the master data that a re-sync newly names in their tour, also through another driver's change", async () => {
      const [a, b] = [await driver(), await driver()];
      const stock = { code: `AW-${a.personalnummer}`, name: 'Lager Ost' };
      const theirs = { articleNumber: `AX-${a.personalnummer}`, name: 'Artikel von A', scannable: true, defaultWarehouse: stock };
      const payloadA = tourPayload(a.personalnummer, { deliveries: 1 });
      payloadA.deliveries[0].positions[0] = position(10, { article: theirs, warehouse: stock });
      await api.post('/sync/tour', payloadA, { token: a.token });
      const payloadB = tourPayload(b.personalnummer, { deliveries: 1 });
      const tourB = (await api.post('/sync/tour', payloadB, { token: b.token })).body.tour;

      // B's delivery now goes to A's customer and gains a line of A's article: B never had either.
      let seq = await maxSeq();
      const resent = copy(payloadB);
      resent.deliveries[0].customer = payloadA.deliveries[0].customer;
      resent.deliveries[0].positions.push(position(90, { article: theirs, warehouse: stock }));
      await api.post('/sync/tour', resent, { token: b.token });
      // Each change for the account as entity and ERP key: article number, warehouse code, customer number.
      const idsFor = async (accountId: number, since: number) =>
        (await changesSince(since))
          .filter((ch) => ch.accountId === accountId)
          .map((ch) => {
            const data = ch.data as Record<string, unknown> | null;
            return `${ch.entity}:${data?.articleNumber ?? data?.code ?? data?.erpCustomerId ?? ''}`;
          });
      const forB = await idsFor(b.personalnummer, seq);
      expect(forB).toEqual(
        expect.arrayContaining([
          `customer:${payloadA.deliveries[0].customer.erpCustomerId}`,
          `article:${theirs.articleNumber}`,
          `warehouse:${stock.code}`,
        ]),
      );
      expect((await changesSince(seq)).every((ch) => ch.accountId !== b.personalnummer || ch.tourId === tourB.id)).toBe(true);

      // A's tour moves the article to a warehouse new to everyone: B, whose line names it, gets both.
      seq = await maxSeq();
      const moved = copy(payloadA);
      const north = { code: `NW-${a.personalnummer}`, name: 'Lager Nord' };
      moved.deliveries[0].positions[0] = position(10, { article: { ...theirs, defaultWarehouse: north }, warehouse: stock });
      await api.post('/sync/tour', moved, { token: a.token });
      expect(await idsFor(b.personalnummer, seq)).toEqual(
        expect.arrayContaining([`article:${theirs.articleNumber}`, `warehouse:${north.code}`]),
      );
    });

    it('moves a delivery to another driver with its local work and tells the old owner it is gone', async () => {
      const a = await driver();
      const b = await driver();
      const payloadA = tourPayload(a.personalnummer, { deliveries: 2, positions: 2 });
      const tourA = (await api.post('/sync/tour', payloadA, { token: a.token })).body.tour;
      const moving = (await details(tourA.id, a.token)).deliveries[1];
      const car = (await api.post('/me/cars', { plate: `B-MV ${nextPersonalnummer()}` }, { token: a.token })).body.car;
      await api.put(`/deliveries/${moving.id}/assigned-car`, { carId: car.id }, { token: a.token });
      const scanned = {
        clientScanId: randomUUID(),
        deliveryItemId: moving.positions[0].id,
        action: 'scan',
        occurredAt: new Date().toISOString(),
      };
      await api.post('/scans', { scans: [scanned] }, { token: a.token });
      const note = await api.post(`/deliveries/${moving.id}/notes`, { text: 'Hintereingang benutzen' }, { token: a.token });
      expect(note.status).toBe(200);
      const flag = (
        await api.post('/services', { key: `mv-${nextPersonalnummer()}`, name: 'Leergut', kind: 'boolean' }, { token: a.token })
      ).body.service;
      expect((await api.put(`/deliveries/${moving.id}/services/${flag.id}`, { boolValue: true }, { token: a.token })).status).toBe(200);
      const seq = await maxSeq();

      const payloadB = tourPayload(b.personalnummer, { deliveries: 1 });
      payloadB.deliveries.push(copy(payloadA.deliveries[1]));
      // Taking another account's delivery needs the sync role (the ERP connector's token).
      const response = await api.post('/sync/tour', payloadB, { token: await api.token(nextPersonalnummer(), [SYNC_ROLE]) });
      expect(response.body.deliveries).toMatchObject({ created: 1, moved: 1 });

      const tourB = await details(response.body.tour.id, b.token);
      const moved = tourB.deliveries.find((d: { id: string }) => d.id === moving.id);
      expect(moved).toMatchObject({ tourId: response.body.tour.id, assignedCarId: null });
      expect(moved.positions[0].scannedQuantity).toBe(1);
      expect(moved.notes.map((n: { text: string }) => n.text)).toEqual(['Hintereingang benutzen']);
      const leftWithA = (await details(tourA.id, a.token)).deliveries.map((d: { belegnummer: string }) => d.belegnummer);
      expect(leftWithA).toEqual([payloadA.deliveries[0].belegnummer]);
      expect((await api.post(`/deliveries/${moving.id}/hold`, { reason: 'nicht mehr meine' }, { token: a.token })).status).toBe(404);
      // The old owner's outbox resends its scan: it was applied, so it is a duplicate, showing nothing of the new owner's line.
      const resent = await api.post('/scans', { scans: [scanned] }, { token: a.token });
      expect(resent.body.results).toEqual([{ clientScanId: scanned.clientScanId, status: 'duplicate', item: null }]);

      const changes = await changesSince(seq);
      expect(changes.find((c) => c.entity === 'delivery' && c.op === 'delete')).toMatchObject({
        entityId: moving.id,
        accountId: a.personalnummer,
        tourId: tourA.id,
      });
      const forB = changes.filter((c) => c.accountId === b.personalnummer && c.entityId !== undefined);
      expect(forB.filter((c) => c.entity === 'delivery' && c.op === 'upsert').map((c) => c.entityId)).toContain(moving.id);
      expect(forB.filter((c) => c.entity === 'note').map((c) => c.entityId)).toEqual([note.body.note.id]);
      expect(forB.filter((c) => c.entity === 'position').length).toBe(4);
      expect(
        forB.some(
          (c) =>
            c.entity === 'customer' &&
            (c.data as { erpCustomerId: number }).erpCustomerId === payloadA.deliveries[1].customer.erpCustomerId,
        ),
      ).toBe(true);

      // The new owner clears the service value: the delete names the value as the move's upsert did.
      const afterMove = await maxSeq();
      expect((await api.delete(`/deliveries/${moving.id}/services/${flag.id}`, { token: b.token })).status).toBe(204);
      const upserted = forB.filter((c) => c.entity === 'serviceValue').map((c) => c.entityId);
      const deleted = (await changesSince(afterMove)).filter((c) => c.entity === 'serviceValue').map((c) => [c.op, c.entityId]);
      expect(upserted).toHaveLength(1);
      expect(deleted).toEqual([['delete', upserted[0]]]);
    });

    it('leaves completed and canceled deliveries as they are', async () => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer, { deliveries: 2, positions: 1 });
      const first = await api.post('/sync/tour', payload, { token });
      const [done, canceled] = (await details(first.body.tour.id, token)).deliveries;
      await api.db.update(deliveries).set({ state: 'completed', completedAt: new Date() }).where(eq(deliveries.id, done.id));
      await api.post(`/deliveries/${canceled.id}/cancel`, { reason: 'Kunde hat geschlossen' }, { token });

      const changed = copy(payload);
      for (const d of changed.deliveries) {
        d.openAmountCents = 999;
        d.paymentTerm = 'Sofort ohne Abzug';
        d.positions[0].quantity = 9;
      }
      const response = await api.post('/sync/tour', changed, { token });
      // Neither is changed; the summary names both as changes ignored, not as unchanged.
      expect(response.body.deliveries).toMatchObject({
        updated: 0,
        unchanged: 0,
        changesIgnored: expect.arrayContaining(payload.deliveries.map((d) => d.belegnummer)),
      });
      expect(response.body.deliveries.changesIgnored).toHaveLength(2);
      const after = (await details(first.body.tour.id, token)).deliveries;
      // The ERP write-back of a completion sends the payment term as the delivery still holds it.
      expect(
        after.map((d: { erpOpenAmountCents: number; paymentTerm: string; positions: { requiredQuantity: number }[] }) => [
          d.erpOpenAmountCents,
          d.paymentTerm,
          d.positions[0].requiredQuantity,
        ]),
      ).toEqual([
        [1500, '14 Tage netto', 3],
        [1500, '14 Tage netto', 3],
      ]);
    });

    it('resolves payment method codes and keeps an unknown code without failing', async () => {
      const { personalnummer, token } = await driver();
      const code = `KARTE-${nextPersonalnummer()}`;
      const [method] = await api.db.insert(paymentMethods).values({ code, name: 'Kartenzahlung', collectOnSite: true }).returning();
      const payload = tourPayload(personalnummer, { deliveries: 2 });
      payload.deliveries[0].paymentMethodCode = code;
      payload.deliveries[1].paymentMethodCode = 'GIBT-ES-NICHT';
      const response = await api.post('/sync/tour', payload, { token });
      expect(response.status).toBe(200);
      const rows = await api.db.select().from(deliveries).where(eq(deliveries.tourId, response.body.tour.id)).orderBy(deliveries.sortOrder);
      expect(rows.map((d) => [d.paymentMethodId, d.erpPaymentMethodCode])).toEqual([
        [method.id, code],
        [null, 'GIBT-ES-NICHT'],
      ]);
    });

    it('keeps the order the driver set when the tour is sent again and appends new deliveries', async () => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer, { deliveries: 3, positions: 1 });
      const first = await api.post('/sync/tour', payload, { token });
      const ids = (await details(first.body.tour.id, token)).deliveries.map((d: { id: string }) => d.id);
      expect(
        (await api.put(`/tours/${first.body.tour.id}/delivery-order`, { deliveryIds: [ids[2], ids[0], ids[1]] }, { token })).status,
      ).toBe(200);

      const changed = copy(payload);
      changed.deliveries.push(delivery({ sequence: 5 }, 1));
      changed.deliveries[0].sequence = 99;
      await api.post('/sync/tour', changed, { token });
      const order = (await details(first.body.tour.id, token)).deliveries.map((d: { belegnummer: string }) => d.belegnummer);
      expect(order).toEqual([
        payload.deliveries[2].belegnummer,
        payload.deliveries[0].belegnummer,
        payload.deliveries[1].belegnummer,
        changed.deliveries[3].belegnummer,
      ]);
    });

    it("keeps the driver's order also after a re-sync whose ERP order happened to match it", async () => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer, { deliveries: 3, positions: 1 });
      const [a, b, c] = payload.deliveries;
      const tourId = (await api.post('/sync/tour', payload, { token })).body.tour.id;
      const idOf = new Map(
        (await details(tourId, token)).deliveries.map((d: { id: string; belegnummer: string }) => [d.belegnummer, d.id]),
      );
      expect(
        (await api.put(`/tours/${tourId}/delivery-order`, { deliveryIds: [b, c, a].map((d) => idOf.get(d.belegnummer)) }, { token }))
          .status,
      ).toBe(200);
      const d = delivery({}, 1);
      const order = async () => (await details(tourId, token)).deliveries.map((x: { belegnummer: string }) => x.belegnummer);
      // The ERP now lists the deliveries as the driver does, then goes back to its own order.
      await api.post(
        '/sync/tour',
        { ...copy(payload), deliveries: [b, c, a, d].map((x) => ({ ...copy(x), sequence: undefined })) },
        { token },
      );
      expect(await order()).toEqual([b, c, a, d].map((x) => x.belegnummer));
      await api.post(
        '/sync/tour',
        { ...copy(payload), deliveries: [a, b, c, d].map((x) => ({ ...copy(x), sequence: undefined })) },
        { token },
      );
      expect(await order()).toEqual([b, c, a, d].map((x) => x.belegnummer));
    });

    it('follows a changed ERP sequence while the driver has not reordered the tour', async () => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer, { deliveries: 3, positions: 1 });
      const first = await api.post('/sync/tour', payload, { token });
      const changed = copy(payload);
      changed.deliveries[0].sequence = 40;
      await api.post('/sync/tour', changed, { token });
      const order = (await details(first.body.tour.id, token)).deliveries.map((d: { belegnummer: string }) => d.belegnummer);
      expect(order).toEqual([payload.deliveries[1].belegnummer, payload.deliveries[2].belegnummer, payload.deliveries[0].belegnummer]);
    });

    it.each([
      [
        'no driver',
        (p: ReturnType<typeof tourPayload>) => {
          delete (p as Partial<typeof p>).driver;
        },
      ],
      [
        'an invalid date',
        (p: ReturnType<typeof tourPayload>) => {
          p.tourDate = '2026-02-30';
        },
      ],
      [
        'a delivery twice',
        (p: ReturnType<typeof tourPayload>) => {
          p.deliveries.push(copy(p.deliveries[0]));
        },
      ],
      [
        'a line number twice',
        (p: ReturnType<typeof tourPayload>) => {
          p.deliveries[0].positions.push(copy(p.deliveries[0].positions[0]));
        },
      ],
      [
        'a quantity of 0',
        (p: ReturnType<typeof tourPayload>) => {
          p.deliveries[0].positions[0].quantity = 0;
        },
      ],
      [
        'a negative open amount',
        (p: ReturnType<typeof tourPayload>) => {
          p.deliveries[0].openAmountCents = -1;
        },
      ],
      [
        'an unknown contact role',
        (p: ReturnType<typeof tourPayload>) => {
          (p.deliveries[0].contacts![0] as { role: string }).role = 'fax';
        },
      ],
      [
        'a quantity beyond 32 bits',
        (p: ReturnType<typeof tourPayload>) => {
          p.deliveries[0].positions[0].quantity = 2 ** 31;
        },
      ],
      [
        'an open amount beyond 32 bits',
        (p: ReturnType<typeof tourPayload>) => {
          p.deliveries[0].openAmountCents = 2 ** 31;
        },
      ],
      [
        'a unit price beyond 32 bits',
        (p: ReturnType<typeof tourPayload>) => {
          p.deliveries[0].positions[0].unitPriceCents = 2 ** 31;
        },
      ],
      [
        'a document number the back office cannot look up',
        (p: ReturnType<typeof tourPayload>) => {
          p.deliveries[0].belegnummer = 'L'.repeat(101);
        },
      ],
      [
        'an article number beyond 100 characters',
        (p: ReturnType<typeof tourPayload>) => {
          p.deliveries[0].positions[0].article.articleNumber = 'A'.repeat(3000);
        },
      ],
      [
        'a warehouse code beyond 100 characters',
        (p: ReturnType<typeof tourPayload>) => {
          p.deliveries[0].positions[0].warehouse = { code: 'W'.repeat(10_000), name: 'x' };
        },
      ],
      [
        'a contact channel beyond 500 characters',
        (p: ReturnType<typeof tourPayload>) => {
          p.deliveries[0].contacts![0].channels![0].value = '0'.repeat(12_000);
        },
      ],
      [
        'a customer name beyond 500 characters',
        (p: ReturnType<typeof tourPayload>) => {
          p.deliveries[0].customer.name = 'K'.repeat(501);
        },
      ],
    ])('refuses a tour with %s with 400 and writes nothing', async (_what, spoil) => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer);
      spoil(payload);
      const response = await api.post('/sync/tour', payload, { token });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation');
      expect(await api.db.select().from(tours).where(eq(tours.accountId, personalnummer))).toEqual([]);
    });

    it('drops fax numbers, which the contract does not carry, and takes any integer as line number', async () => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer, { deliveries: 1 });
      (payload.deliveries[0].contacts![2].channels as { kind: string; position: number; value: string }[]).push({
        kind: 'fax',
        position: 2,
        value: '030 7654321',
      });
      payload.deliveries[0].positions[1].lineNumber = -5;
      const response = await api.post('/sync/tour', payload, { token });
      expect(response.status).toBe(200);
      const [delivery] = (await details(response.body.tour.id, token)).deliveries;
      const channels = delivery.contacts.flatMap((c: { channels: { kind: string; value: string }[] }) => c.channels);
      expect(channels.map((c: { kind: string }) => c.kind)).not.toContain('fax');
      expect(channels.map((c: { value: string }) => c.value)).toContain('0171 2345678');
      expect(delivery.positions.map((p: { lineNumber: number }) => p.lineNumber)).toContain(-5);
    });

    it('takes a line with a negative unit price, a deposit taken back', async () => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer, { deliveries: 1 });
      payload.deliveries[0].positions[1].unitPriceCents = -150;
      const response = await api.post('/sync/tour', payload, { token });
      expect(response.status).toBe(200);
      const [line] = (await details(response.body.tour.id, token)).deliveries[0].positions.filter(
        (p: { lineNumber: number }) => p.lineNumber === 20,
      );
      expect(line.unitPriceCents).toBe(-150);
    });

    it('creates one tour when the same new tour arrives twice at once', async () => {
      const { personalnummer, token } = await driver();
      const payload = tourPayload(personalnummer, { deliveries: 5, positions: 3 });
      const [a, b] = await Promise.all([api.post('/sync/tour', payload, { token }), api.post('/sync/tour', copy(payload), { token })]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(a.body.tour.id).toBe(b.body.tour.id);
      expect([a.body.deliveries.created, b.body.deliveries.created].sort()).toEqual([0, 5]);
      const tour = await details(a.body.tour.id, token);
      expect(tour.deliveries).toHaveLength(5);
      expect(tour.deliveries.flatMap((d: { positions: unknown[] }) => d.positions)).toHaveLength(15);
      expect(tour.deliveries.flatMap((d: { contacts: unknown[] }) => d.contacts)).toHaveLength(10);
    });

    it('creates a tour without deliveries and names it', async () => {
      const { personalnummer, token } = await driver();
      const response = await api.post('/sync/tour', { ...tourPayload(personalnummer, { deliveries: 0 }), name: 'Leere Tour' }, { token });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ created: true, tour: { name: 'Leere Tour' }, deliveries: { created: 0 } });
      const renamed = await api.post('/sync/tour', { ...tourPayload(personalnummer, { deliveries: 0 }), name: 'Tour Süd' }, { token });
      expect(renamed.body).toMatchObject({ created: false, tour: { id: response.body.tour.id, name: 'Tour Süd' } });
      expect(await details(response.body.tour.id, token)).toMatchObject({ tour: { name: 'Tour Süd' }, deliveries: [], customers: [] });
    });

    it('refuses a tour without a token with 401', async () => {
      const response = await api.post('/sync/tour', tourPayload(nextPersonalnummer()));
      expect(response.status).toBe(401);
    });

    it('lets a token with the sync role send the tour of another driver and creates that account', async () => {
      const sender = await api.token(nextPersonalnummer(), [SYNC_ROLE]);
      const target = nextPersonalnummer();
      const response = await api.post('/sync/tour', tourPayload(target, { driverName: 'Neue Fahrerin' }), { token: sender });
      expect(response.status).toBe(200);
      expect(response.body.tour.accountId).toBe(target);
      const [account] = await api.db.select().from(accounts).where(eq(accounts.personalnummer, target));
      expect(account).toMatchObject({ name: 'Neue Fahrerin', active: true });
    });
  });
});
