import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { deliveries, deliveryItems, notes, scanAudit } from '../../server/db/schema.js';
import { databaseKinds } from '../helpers/databases.js';
import { useTestServer } from '../helpers/server.js';
import { operableDelivery, scan, type OperableOptions } from '../helpers/operableDelivery.js';

describe.each(databaseKinds)('delivery operations on %s', (kind) => {
  const api = useTestServer(kind);
  const setup = (options?: OperableOptions) => operableDelivery(api, options);

  describe('scans', () => {
    it('applies scans in order, answers duplicates with the current state and rejects with a reason', async () => {
      const { token, items } = await setup();
      const first = scan(items[0].id, 'scan');
      const response = await api.post(
        '/scans',
        {
          scans: [first, scan(items[0].id, 'scan'), scan(items[0].id, 'scan'), scan(items[0].id, 'scan'), scan(items[1].id, 'scan')],
        },
        { token },
      );
      expect(response.status).toBe(200);
      expect(response.body.results.map((r: { status: string }) => r.status)).toEqual([
        'applied',
        'applied',
        'applied',
        'rejected',
        'rejected',
      ]);
      expect(response.body.results[2].item).toMatchObject({ state: 'Done', scannedQuantity: 3, requiredQuantity: 3, creditedQuantity: 0 });
      expect(response.body.results[3]).toMatchObject({ code: 'quantity_exceeded', item: null });
      expect(response.body.results[4].code).toBe('not_scannable');

      const again = await api.post('/scans', { scans: [first] }, { token });
      expect(again.body.results[0]).toMatchObject({
        clientScanId: first.clientScanId,
        status: 'duplicate',
        item: { scannedQuantity: 3, state: 'Done' },
      });
      const audit = await api.db.select().from(scanAudit).where(eq(scanAudit.deliveryItemId, items[0].id));
      expect(audit).toHaveLength(3);
      expect(audit[0].occurredAt.toISOString()).toBe(first.occurredAt);
    });

    it('answers a scan whose id another event took as a duplicate that names other_event and counts nothing', async () => {
      const { token, items, path } = await setup();
      const clientEventId = randomUUID();
      expect(
        (await api.post(`${path}/credit`, { clientEventId, action: 'set', amountCents: 1000, reason: 'Bruch' }, { token })).status,
      ).toBe(200);
      const response = await api.post('/scans', { scans: [{ ...scan(items[0].id, 'scan'), clientScanId: clientEventId }] }, { token });
      expect(response.body.results).toEqual([
        { clientScanId: clientEventId, status: 'duplicate', code: 'other_event', reason: expect.any(String), item: null },
      ]);
      const [line] = await api.db.select().from(deliveryItems).where(eq(deliveryItems.id, items[0].id));
      expect(line.scannedQuantity).toBe(0);
    });

    it('rejects scans of a line of another account as not_found and of a held delivery as delivery_not_active', async () => {
      const mine = await setup();
      const other = await setup();
      await api.post(`${mine.path}/hold`, { reason: 'Kunde nicht da' }, { token: mine.token });
      const response = await api.post(
        '/scans',
        { scans: [scan(other.items[0].id, 'scan'), scan(mine.items[0].id, 'scan'), scan(randomUUID(), 'scan')] },
        { token: mine.token },
      );
      expect(response.body.results.map((r: { code: string }) => r.code)).toEqual(['not_found', 'delivery_not_active', 'not_found']);
    });

    it('answers a resent refused scan as a duplicate with the refusal it got, also after the delivery was resumed', async () => {
      const { token, items, path } = await setup();
      await api.post(`${path}/hold`, { reason: 'Kunde nicht da' }, { token });
      const refused = scan(items[0].id, 'scan');
      expect((await api.post('/scans', { scans: [refused] }, { token })).body.results[0]).toMatchObject({
        status: 'rejected',
        code: 'delivery_not_active',
      });
      await api.post(`${path}/resume`, undefined, { token });
      expect((await api.post('/scans', { scans: [refused] }, { token })).body.results[0]).toEqual({
        clientScanId: refused.clientScanId,
        status: 'duplicate',
        code: 'delivery_not_active',
        reason: expect.any(String),
        item: expect.objectContaining({ id: items[0].id, scannedQuantity: 0 }),
      });
      expect((await api.post('/scans', { scans: [scan(items[0].id, 'scan')] }, { token })).body.results[0].status).toBe('applied');
    });

    it('credits pieces, removes and unremoves a line and deletes the credit note on unremove', async () => {
      const { token, items, path } = await setup();
      const credited = await api.post('/scans', { scans: [scan(items[0].id, 'remove', { quantity: 1, reason: 'beschädigt' })] }, { token });
      expect(credited.body.results[0].item).toMatchObject({ creditedQuantity: 1, state: 'InProgress' });
      const note = await api.post(`${path}/notes`, { text: 'Eine Kiste beschädigt', creditDeliveryItemId: items[0].id }, { token });
      expect(note.status).toBe(200);
      const other = await api.post(`${path}/notes`, { text: 'Hinterhof' }, { token });

      const unremoved = await api.post('/scans', { scans: [scan(items[0].id, 'unremove')] }, { token });
      expect(unremoved.body.results[0].item).toMatchObject({ creditedQuantity: 0, state: 'InProgress' });
      const remaining = await api.db.select().from(notes).where(eq(notes.deliveryId, items[0].deliveryId));
      expect(remaining.map((n) => n.id)).toEqual([other.body.note.id]);

      const removed = await api.post('/scans', { scans: [scan(items[0].id, 'remove'), scan(items[0].id, 'scan')] }, { token });
      expect(removed.body.results[0].item.state).toBe('Removed');
      expect(removed.body.results[1].code).toBe('item_removed');
    });

    it('answers an empty list with no results', async () => {
      const { token } = await setup();
      expect(await api.post('/scans', { scans: [] }, { token })).toMatchObject({ status: 200, body: { results: [] } });
    });

    it.each([
      [{ scans: [{ deliveryItemId: randomUUID(), action: 'scan', occurredAt: new Date().toISOString() }] }, 'a scan without clientScanId'],
      [
        { scans: [{ clientScanId: randomUUID(), deliveryItemId: randomUUID(), action: 'jump', occurredAt: new Date().toISOString() }] },
        'an unknown action',
      ],
      [
        { scans: [{ clientScanId: randomUUID(), deliveryItemId: randomUUID(), action: 'scan', occurredAt: 'yesterday' }] },
        'a bad timestamp',
      ],
      [
        { scans: [{ clientScanId: randomUUID(), deliveryItemId: randomUUID(), action: 'scan', occurredAt: '0000-01-01T00:00:00Z' }] },
        'a timestamp in year 0',
      ],
      [
        { scans: [{ clientScanId: randomUUID(), deliveryItemId: randomUUID(), action: 'scan', occurredAt: '0001-01-01T00:00:00+01:00' }] },
        'a timestamp in year 0 in UTC',
      ],
      [
        { scans: [{ clientScanId: randomUUID(), deliveryItemId: randomUUID(), action: 'scan', occurredAt: '9999-12-31T23:00:00-02:00' }] },
        'a timestamp in year 10000 in UTC',
      ],
      [
        {
          scans: [
            {
              clientScanId: randomUUID(),
              deliveryItemId: randomUUID(),
              action: 'remove',
              quantity: 0,
              occurredAt: new Date().toISOString(),
            },
          ],
        },
        'a zero quantity',
      ],
    ])('answers 400 for %j (%s)', async (body, _why) => {
      const { token } = await setup();
      const response = await api.post('/scans', body, { token });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation');
    });
  });

  describe('lifecycle', () => {
    it('holds with a reason, resumes, cancels, and refuses invalid transitions with 400', async () => {
      const { token, path } = await setup();
      const before = Date.now();
      const held = await api.post(`${path}/hold`, { reason: ' Kunde nicht angetroffen ' }, { token });
      expect(held.status).toBe(200);
      expect(held.body.delivery).toMatchObject({ state: 'held', stateReason: 'Kunde nicht angetroffen' });
      // The answer carries the time the change was stored with.
      const [stored] = await api.db.select().from(deliveries).where(eq(deliveries.id, held.body.delivery.id));
      expect(held.body.delivery.updatedAt).toBe(stored.updatedAt.toISOString());
      expect(Date.parse(held.body.delivery.updatedAt)).toBeGreaterThanOrEqual(before);
      const again = await api.post(`${path}/hold`, { reason: 'x' }, { token });
      expect(again.status).toBe(400);
      expect(again.body.code).toBe('invalid_state_transition');
      // A state that does not allow the operation is the reason given, also when the request is incomplete.
      expect((await api.post(`${path}/hold`, { reason: '  ' }, { token })).body.code).toBe('invalid_state_transition');
      expect((await api.post(`${path}/resume`, undefined, { token })).body.delivery.state).toBe('active');
      expect((await api.post(`${path}/resume`, undefined, { token })).status).toBe(400);
      const canceled = await api.post(`${path}/cancel`, { reason: 'Storniert' }, { token });
      expect(canceled.body.delivery.state).toBe('canceled');
      expect((await api.post(`${path}/resume`, undefined, { token })).status).toBe(400);
      expect((await api.post(`${path}/cancel`, { reason: 'nochmal' }, { token })).status).toBe(400);
      expect((await api.post(`${path}/cancel`, { reason: '' }, { token })).body).toMatchObject({
        status: 400,
        code: 'invalid_state_transition',
      });
    });

    it.each(['hold', 'cancel'])(
      'refuses %s with an empty or missing reason, naming it, and leaves the delivery active',
      async (operation) => {
        const { token, path, delivery } = await setup();
        const blank = await api.post(`${path}/${operation}`, { reason: '   ' }, { token });
        expect(blank).toMatchObject({
          status: 400,
          body: { code: 'validation', errors: [{ path: 'reason', message: 'must not be empty' }] },
        });
        expect((await api.post(`${path}/${operation}`, {}, { token })).body).toMatchObject({
          code: 'validation',
          errors: [expect.objectContaining({ path: 'reason' })],
        });
        expect((await api.db.select().from(deliveries).where(eq(deliveries.id, delivery.id)))[0].state).toBe('active');
      },
    );

    it('answers 404 for a delivery of another account or an unknown one, and 400 for an invalid id', async () => {
      const mine = await setup();
      const other = await setup();
      expect((await api.post(`${other.path}/hold`, { reason: 'x' }, { token: mine.token })).status).toBe(404);
      expect((await api.post(`/deliveries/${randomUUID()}/resume`, undefined, { token: mine.token })).status).toBe(404);
      expect((await api.post('/deliveries/123/resume', undefined, { token: mine.token })).status).toBe(400);
    });

    it('assigns a car of the account, clears it, and refuses a car of another account with 400', async () => {
      const mine = await setup();
      const other = await setup();
      const car = (await api.post('/me/cars', { plate: `B-${mine.accountId}` }, { token: mine.token })).body.car;
      const foreign = (await api.post('/me/cars', { plate: `B-${other.accountId}` }, { token: other.token })).body.car;
      expect((await api.put(`${mine.path}/assigned-car`, { carId: car.id }, { token: mine.token })).body.delivery.assignedCarId).toBe(
        car.id,
      );
      expect((await api.put(`${mine.path}/assigned-car`, { carId: null }, { token: mine.token })).body.delivery.assignedCarId).toBeNull();
      const refused = await api.put(`${mine.path}/assigned-car`, { carId: foreign.id }, { token: mine.token });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ code: 'validation', errors: [{ path: 'carId', message: 'is not a car of your account' }] });
      expect((await api.put(`${mine.path}/assigned-car`, {}, { token: mine.token })).status).toBe(400);
    });
  });
});
