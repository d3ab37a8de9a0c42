import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { creditEvents, deliveries, paymentProtocol } from '../../server/db/schema.js';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';
import { operableDelivery, type OperableOptions } from '../helpers/operableDelivery.js';

describe.each(databaseKinds)('money on a delivery on %s', (kind) => {
  const api = useTestServer(kind);
  const setup = (options?: OperableOptions) => operableDelivery(api, options);

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
});
