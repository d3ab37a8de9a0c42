import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { changeLog, creditEvents, deliveries, deliveryItems, notes, paymentProtocol, scanAudit } from '../../server/db/schema.js';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';

let nextAccount = 3100;

describe.each(databaseKinds)('delivery operations on %s', (kind) => {
  const api = useTestServer(kind);

  /** A driver with one delivery: line 0 scannable (3 pieces, none scanned, 10 € each), line 1 a service line. */
  async function setup(options: { openAmountCents?: number; paymentMethodId?: string | null } = {}) {
    const accountId = nextAccount++;
    const token = await api.token(accountId);
    const tour = await newTour(api.db, {
      accountId,
      openAmountCents: options.openAmountCents ?? 5000,
      paymentMethodId: options.paymentMethodId ?? null,
      positions: [
        { scannable: true, quantity: 3, scannedQuantity: 0, state: 'InProgress', unitPriceCents: 1000 },
        { scannable: false, quantity: 1, unitPriceCents: null },
      ],
    });
    const { delivery, items } = tour.deliveries[0];
    return { accountId, token, delivery, items, path: `/deliveries/${delivery.id}` };
  }

  const scan = (deliveryItemId: string, action: string, extra: Record<string, unknown> = {}) => ({
    clientScanId: randomUUID(),
    deliveryItemId,
    action,
    occurredAt: new Date().toISOString(),
    ...extra,
  });

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

  describe('money credit', () => {
    it('sets and removes a credit idempotently and lowers the open amount', async () => {
      const { token, path, delivery } = await setup({ openAmountCents: 5000 });
      const clientEventId = randomUUID();
      const set = await api.post(`${path}/credit`, { clientEventId, action: 'set', amountCents: 2000, reason: 'Verspätung' }, { token });
      expect(set.status).toBe(200);
      expect(set.body).toMatchObject({ credit: { amountCents: 2000, reason: 'Verspätung' }, openAmountCents: 3000 });
      const replay = await api.post(`${path}/credit`, { clientEventId, action: 'set', amountCents: 2000, reason: 'Verspätung' }, { token });
      expect(replay.body.credit.amountCents).toBe(2000);
      const removed = await api.post(`${path}/credit`, { clientEventId: randomUUID(), action: 'remove' }, { token });
      expect(removed.body).toMatchObject({ credit: null, openAmountCents: 5000 });
      const log = await api.db.select().from(creditEvents).where(eq(creditEvents.deliveryId, delivery.id));
      expect(log.map((e) => e.action)).toEqual(['set', 'remove']);
    });

    it.each([
      [{ action: 'set', amountCents: 1500, reason: 'x' }, 'amountCents'],
      [{ action: 'set', amountCents: 16000, reason: 'x' }, 'amountCents'],
      [{ action: 'set', amountCents: 0, reason: 'x' }, 'amountCents'],
      [{ action: 'set', amountCents: 1000, reason: '  ' }, 'reason'],
      [{ action: 'set', reason: 'x' }, 'amountCents'],
      [{ action: 'grant', amountCents: 1000 }, 'action'],
    ])('refuses %j with 400 naming %s', async (body, path) => {
      const { token, path: at } = await setup();
      const response = await api.post(`${at}/credit`, { clientEventId: randomUUID(), ...body }, { token });
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ code: 'validation', errors: [expect.objectContaining({ path })] });
    });

    it("repeats a refusal to a copy under the same id, for the credit's amount as for the delivery's state", async () => {
      const { token, path, delivery } = await setup();
      const clientEventId = randomUUID();
      expect(
        (await api.post(`${path}/credit`, { clientEventId, action: 'set', amountCents: 1500, reason: 'Bruch' }, { token })).status,
      ).toBe(400);
      const corrected = await api.post(`${path}/credit`, { clientEventId, action: 'set', amountCents: 2000, reason: 'Bruch' }, { token });
      expect(corrected).toMatchObject({
        status: 400,
        body: { code: 'validation', errors: [{ path: 'amountCents' }, { path: 'clientEventId' }] },
      });

      expect(
        (await api.post(`${path}/credit`, { clientEventId: randomUUID(), action: 'set', amountCents: 2000, reason: 'Bruch' }, { token }))
          .status,
      ).toBe(200);

      const removal = { clientEventId: randomUUID(), action: 'remove' };
      await api.post(`${path}/hold`, { reason: 'Pause' }, { token });
      expect((await api.post(`${path}/credit`, removal, { token })).body.code).toBe('invalid_state_transition');
      await api.post(`${path}/resume`, undefined, { token });
      expect((await api.post(`${path}/credit`, removal, { token })).body.code).toBe('invalid_state_transition');
      const [row] = await api.db.select().from(deliveries).where(eq(deliveries.id, delivery.id));
      expect(row.creditAmountCents).toBe(2000);
    });

    it('refuses to remove a credit that is not there with 400', async () => {
      const { token, path } = await setup();
      const response = await api.post(`${path}/credit`, { clientEventId: randomUUID(), action: 'remove' }, { token });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation');
    });

    it('answers a reused event id with the credit it stands for, and refuses a credit on a held delivery', async () => {
      const { token, path } = await setup();
      const id = randomUUID();
      await api.post(`${path}/credit`, { clientEventId: id, action: 'set', amountCents: 1000, reason: 'x' }, { token });
      const reused = await api.post(`${path}/credit`, { clientEventId: id, action: 'set', amountCents: 3000, reason: 'y' }, { token });
      expect(reused.status).toBe(200);
      expect(reused.body.credit).toMatchObject({ amountCents: 1000, reason: 'x' });
      const other = await setup();
      const elsewhere = await api.post(
        `${other.path}/credit`,
        { clientEventId: id, action: 'set', amountCents: 1000, reason: 'x' },
        { token: other.token },
      );
      // Another account's id on the caller's own delivery: the id is taken, the delivery is there.
      expect(elsewhere.status).toBe(400);
      expect(elsewhere.body).toMatchObject({ code: 'validation', errors: [{ path: 'clientEventId' }] });
      const [untouched] = await api.db.select().from(deliveries).where(eq(deliveries.id, other.delivery.id));
      expect(untouched.creditAmountCents).toBeNull();
      await api.post(`${path}/hold`, { reason: 'Pause' }, { token });
      const held = await api.post(`${path}/credit`, { clientEventId: randomUUID(), action: 'remove' }, { token });
      expect(held.status).toBe(400);
      expect(held.body.code).toBe('invalid_state_transition');
    });
  });

  it('refuses a credit or payment id already used for another event of the account with 400 naming clientEventId', async () => {
    const first = await setup({ openAmountCents: 5000 });
    const sibling = `/deliveries/${(await newTour(api.db, { accountId: first.accountId, openAmountCents: 5000 })).deliveries[0].delivery.id}`;
    const id = randomUUID();
    expect(
      (await api.post(`${first.path}/credit`, { clientEventId: id, action: 'set', amountCents: 1000, reason: 'x' }, { token: first.token }))
        .status,
    ).toBe(200);
    const method = (
      await api.post(
        '/payment-methods',
        { code: `EC-${randomUUID().slice(0, 8)}`, name: 'EC', collectOnSite: true },
        { token: first.token },
      )
    ).body.paymentMethod;
    const reused = [
      await api.post(`${sibling}/credit`, { clientEventId: id, action: 'set', amountCents: 1000, reason: 'x' }, { token: first.token }),
      await api.post(
        `${first.path}/payment`,
        { clientEventId: id, expectedAmountCents: 4000, paymentMethodId: method.id },
        { token: first.token },
      ),
    ];
    for (const response of reused) {
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({
        code: 'validation',
        errors: [{ path: 'clientEventId', message: 'already used for another event' }],
      });
    }
    expect(await api.db.select().from(creditEvents).where(eq(creditEvents.clientEventId, id))).toHaveLength(1);
    expect(await api.db.select().from(paymentProtocol).where(eq(paymentProtocol.clientEventId, id))).toEqual([]);
  });

  it('answers a credit repeated after its delivery moved to another driver with 404', async () => {
    const first = await setup();
    const other = await setup();
    const body = { clientEventId: randomUUID(), action: 'set', amountCents: 1000, reason: 'x' };
    expect((await api.post(`${first.path}/credit`, body, { token: first.token })).status).toBe(200);
    const [{ tourId }] = await api.db.select({ tourId: deliveries.tourId }).from(deliveries).where(eq(deliveries.id, other.delivery.id));
    await api.db.update(deliveries).set({ tourId }).where(eq(deliveries.id, first.delivery.id));
    const repeated = await api.post(`${first.path}/credit`, body, { token: first.token });
    expect(repeated.status).toBe(404);
    expect(repeated.body.code).toBe('not_found');
  });

  describe('payment', () => {
    async function method(token: string, active = true) {
      const created = (
        await api.post('/payment-methods', { code: `BAR-${randomUUID().slice(0, 8)}`, name: 'Bar', collectOnSite: true }, { token })
      ).body.paymentMethod;
      if (!active) await api.patch(`/payment-methods/${created.id}`, { active: false }, { token });
      return created;
    }

    it('logs exactly the open amount with a snapshot of the method code, idempotently', async () => {
      const { token, path, delivery } = await setup({ openAmountCents: 4200 });
      const bar = await method(token);
      const body = { clientEventId: randomUUID(), expectedAmountCents: 4200, paymentMethodId: bar.id };
      const paid = await api.post(`${path}/payment`, body, { token });
      expect(paid.status).toBe(200);
      expect(paid.body.payment).toMatchObject({
        amountCents: 4200,
        paymentMethodId: bar.id,
        paymentMethodCode: bar.code,
        deliveryId: delivery.id,
      });
      const replay = await api.post(`${path}/payment`, body, { token });
      expect(replay.body.payment.id).toBe(paid.body.payment.id);
      expect(await api.db.select().from(paymentProtocol).where(eq(paymentProtocol.deliveryId, delivery.id))).toHaveLength(1);
    });

    it('refuses a wrong amount, no open amount, an inactive or unknown method and a held delivery', async () => {
      const open = await setup({ openAmountCents: 4200 });
      const closed = await setup({ openAmountCents: 0 });
      const bar = await method(open.token);
      const inactive = await method(open.token, false);
      const pay = (s: typeof open, expectedAmountCents: number, paymentMethodId: string) =>
        api.post(`${s.path}/payment`, { clientEventId: randomUUID(), expectedAmountCents, paymentMethodId }, { token: s.token });
      const refusal = async (reply: Promise<{ status: number; body: { code: string; errors?: { path: string }[] } }>) => {
        const { status, body } = await reply;
        return { status, code: body.code, paths: body.errors?.map((e) => e.path) };
      };
      expect(await refusal(pay(open, 4100, bar.id))).toEqual({ status: 400, code: 'validation', paths: ['expectedAmountCents'] });
      expect(await refusal(pay(closed, 0, bar.id))).toEqual({ status: 400, code: 'validation', paths: undefined });
      expect(await refusal(pay(open, 4200, inactive.id))).toEqual({ status: 400, code: 'validation', paths: ['paymentMethodId'] });
      expect(await refusal(pay(open, 4200, randomUUID()))).toEqual({ status: 400, code: 'validation', paths: ['paymentMethodId'] });
      await api.post(`${open.path}/hold`, { reason: 'x' }, { token: open.token });
      expect((await pay(open, 4200, bar.id)).status).toBe(400);
      expect(
        (await api.post(`${open.path}/payment`, { clientEventId: randomUUID(), paymentMethodId: bar.id }, { token: open.token })).status,
      ).toBe(400);
    });
  });

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
      const accountId = nextAccount++;
      const token = await api.token(accountId);
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
