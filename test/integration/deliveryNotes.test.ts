import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { changeLog, notes } from '../../server/db/schema.js';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';
import { newDriver, operableDelivery, scan, type OperableOptions } from '../helpers/operableDelivery.js';

describe.each(databaseKinds)('notes and service values on %s', (kind) => {
  const api = useTestServer(kind);
  const setup = (options?: OperableOptions) => operableDelivery(api, options);

  describe('notes', () => {
    it('creates, changes and deletes notes; any driver of the account may edit', async () => {
      const { token, path, accountId } = await setup();
      const created = await api.post(`${path}/notes`, { text: 'Bitte klingeln' }, { token });
      expect(created.body.note).toMatchObject({ text: 'Bitte klingeln', imageAttachment: null, isAmountCreditNote: false });
      const colleague = await api.token(accountId);
      const changed = await api.patch(
        `${path}/notes/${created.body.note.id}`,
        { text: 'Hintereingang', imageAttachment: '~abc' },
        { token: colleague },
      );
      expect(changed.body.note).toMatchObject({ text: 'Hintereingang', imageAttachment: '~abc' });
      expect((await api.delete(`${path}/notes/${created.body.note.id}`, { token })).status).toBe(204);
      expect((await api.delete(`${path}/notes/${created.body.note.id}`, { token })).status).toBe(404);
      expect((await api.patch(`${path}/notes/${created.body.note.id}`, { text: 'x' }, { token })).status).toBe(404);
    });

    it.each([[{}], [{ text: '   ' }], [{ text: '', imageAttachment: ' ' }], [{ text: null, imageAttachment: null }]])(
      'refuses a note without content %j',
      async (body) => {
        const { token, path } = await setup();
        const response = await api.post(`${path}/notes`, body, { token });
        expect(response.status).toBe(400);
        const note = (await api.post(`${path}/notes`, { text: 'ok' }, { token })).body.note;
        expect((await api.patch(`${path}/notes/${note.id}`, { text: '  ' }, { token })).status).toBe(400);
      },
    );

    it('changes a note by its id whatever delivery the path names, but deletes it only under its own', async () => {
      const { accountId, token } = await newDriver(api);
      const tour = await newTour(api.db, {
        accountId,
        deliveries: 2,
        positions: [{ scannable: true, quantity: 1, scannedQuantity: 0, state: 'InProgress' }],
      });
      const [a, b] = tour.deliveries.map((d) => d.delivery.id);
      const note = (await api.post(`/deliveries/${a}/notes`, { text: 'an A' }, { token })).body.note;
      const changed = await api.patch(`/deliveries/${b}/notes/${note.id}`, { text: 'über B' }, { token });
      expect(changed.status).toBe(200);
      expect(changed.body.note).toMatchObject({ id: note.id, deliveryId: a, text: 'über B' });
      expect((await api.patch(`/deliveries/${randomUUID()}/notes/${note.id}`, { text: 'irgendwo' }, { token })).body.note.text).toBe(
        'irgendwo',
      );
      expect((await api.delete(`/deliveries/${b}/notes/${note.id}`, { token })).status).toBe(404);
      const [stored] = await api.db.select().from(notes).where(eq(notes.id, note.id));
      expect(stored).toMatchObject({ deliveryId: a, text: 'irgendwo' });
      expect((await api.delete(`/deliveries/${a}/notes/${note.id}`, { token })).status).toBe(204);
    });

    it('answers 404 for a note of another account and 400 for an author car of another account', async () => {
      const mine = await setup();
      const other = await setup();
      const note = (await api.post(`${other.path}/notes`, { text: 'fremd' }, { token: other.token })).body.note;
      const missing = await api.patch(`${mine.path}/notes/${randomUUID()}`, { text: 'x' }, { token: mine.token });
      const foreign = await api.patch(`${mine.path}/notes/${note.id}`, { text: 'x' }, { token: mine.token });
      expect(foreign.status).toBe(404);
      // Exactly as if it did not exist: nothing tells a foreign note from a missing one.
      expect(foreign.body).toEqual(missing.body);
      expect((await api.delete(`${mine.path}/notes/${note.id}`, { token: mine.token })).body).toEqual(missing.body);
      const foreignCar = (await api.post('/me/cars', { plate: `N-${other.accountId}` }, { token: other.token })).body.car;
      const foreignAuthor = await api.post(`${mine.path}/notes`, { text: 'x', authorCarId: foreignCar.id }, { token: mine.token });
      expect(foreignAuthor.status).toBe(400);
      expect(foreignAuthor.body.errors).toEqual([{ path: 'authorCarId', message: 'is not a car of your account' }]);
    });
  });

  describe('service values', () => {
    async function service(token: string, body: Record<string, unknown>) {
      return (await api.post('/services', { key: `svc-${randomUUID().slice(0, 8)}`, name: 'Service', ...body }, { token })).body.service;
    }

    it('sets, overwrites and clears values that fit the kind and limits', async () => {
      const { token, path } = await setup();
      const pallets = await service(token, { kind: 'numeric', minValue: 0, maxValue: 5 });
      const set = await api.put(`${path}/services/${pallets.id}`, { numericValue: 3 }, { token });
      expect(set.status).toBe(200);
      expect(set.body.serviceValue).toMatchObject({ serviceId: pallets.id, numericValue: 3, boolValue: null });
      expect((await api.put(`${path}/services/${pallets.id}`, { numericValue: 5 }, { token })).body.serviceValue.numericValue).toBe(5);
      expect((await api.delete(`${path}/services/${pallets.id}`, { token })).status).toBe(204);
    });

    it('refuses values that do not fit, unknown services and inactive deliveries', async () => {
      const { token, path } = await setup();
      const pallets = await service(token, { kind: 'numeric', minValue: 0, maxValue: 5 });
      const flag = await service(token, { kind: 'boolean' });
      const above = await api.put(`${path}/services/${pallets.id}`, { numericValue: 6 }, { token });
      expect(above).toMatchObject({
        status: 400,
        body: { code: 'validation', errors: [{ path: 'numericValue', message: 'must be <= 5' }] },
      });
      const wrongKind = await api.put(`${path}/services/${pallets.id}`, { boolValue: true }, { token });
      expect(wrongKind).toMatchObject({ status: 400, body: { errors: [{ path: 'numericValue' }] } });
      expect((await api.put(`${path}/services/${flag.id}`, { boolValue: true, numericValue: 1 }, { token })).status).toBe(400);
      expect((await api.put(`${path}/services/${flag.id}`, { numericValue: 'a' }, { token })).status).toBe(400);
      expect((await api.put(`${path}/services/${randomUUID()}`, { boolValue: true }, { token })).status).toBe(404);
      await api.post(`${path}/hold`, { reason: 'x' }, { token });
      expect((await api.put(`${path}/services/${flag.id}`, { boolValue: true }, { token })).status).toBe(400);
      expect((await api.delete(`${path}/services/${flag.id}`, { token })).status).toBe(400);
    });

    it('answers 400 validation, not 500, for numbers beyond the 32-bit integers the database keeps, and stores nothing', async () => {
      const { token, path, items, delivery } = await setup();
      const pallets = await service(token, { kind: 'numeric' });
      const tooBig = 2 ** 31;
      const refused = [
        await api.put(`${path}/services/${pallets.id}`, { numericValue: tooBig }, { token }),
        await api.put(`${path}/services/${pallets.id}`, { numericValue: -tooBig - 1 }, { token }),
        await api.post(`${path}/credit`, { clientEventId: randomUUID(), action: 'set', amountCents: tooBig, reason: 'x' }, { token }),
        await api.post(
          `${path}/payment`,
          { clientEventId: randomUUID(), expectedAmountCents: tooBig, paymentMethodId: randomUUID() },
          { token },
        ),
        await api.post('/scans', { scans: [scan(items[0].id, 'remove', { quantity: tooBig, reason: 'x' })] }, { token }),
        await api.post(
          '/sync/push',
          {
            clientId: 'c',
            events: [
              {
                eventId: randomUUID(),
                occurredAt: new Date().toISOString(),
                type: 'note.create',
                deliveryId: delivery.id,
                noteId: randomUUID(),
                text: 'vorher',
              },
              {
                eventId: randomUUID(),
                occurredAt: new Date().toISOString(),
                type: 'service.set',
                deliveryId: delivery.id,
                serviceId: pallets.id,
                numericValue: tooBig,
              },
            ],
          },
          { token },
        ),
      ];
      for (const response of refused) expect(response).toMatchObject({ status: 400, body: { code: 'validation' } });
      expect(await api.db.select().from(notes).where(eq(notes.deliveryId, delivery.id))).toEqual([]);
      expect(
        (await api.put(`${path}/services/${pallets.id}`, { numericValue: tooBig - 1 }, { token })).body.serviceValue.numericValue,
      ).toBe(tooBig - 1);
    });

    it('answers 409 when deleting a service that a delivery still references', async () => {
      const { token, path } = await setup();
      const flag = await service(token, { kind: 'boolean' });
      await api.put(`${path}/services/${flag.id}`, { boolValue: true }, { token });
      expect((await api.delete(`/services/${flag.id}`, { token })).status).toBe(409);
    });
  });

  it('writes change records for what an operation touched, scoped to the tour owner', async () => {
    const { token, path, delivery, accountId } = await setup();
    const before = await api.db.select().from(changeLog);
    await api.post(`${path}/hold`, { reason: 'Mittag' }, { token });
    const after = await api.db.select().from(changeLog);
    const added = after.slice(before.length);
    expect(added).toHaveLength(1);
    expect(added[0]).toMatchObject({ entity: 'delivery', op: 'upsert', entityId: delivery.id, tourId: delivery.tourId, accountId });
  });
});
