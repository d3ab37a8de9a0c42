import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { attachments, deliveries, deliveryItems, processedEvents } from '../../server/db/schema.js';
import { databaseKinds } from '../helpers/databases.js';
import { expectProblem } from '../helpers/problems.js';
import { useTestServer } from '../helpers/server.js';
import { complete, completionOf, paymentMethod, setup, stateOf } from '../helpers/completions.js';

describe.each(databaseKinds)('completion gates on %s', (kind) => {
  const api = useTestServer(kind);

  describe('gates, in the order of the spec', () => {
    it.each(['held', 'canceled', 'completed'] as const)('refuses a %s delivery with 400 invalid_state_transition', async (state) => {
      const { token, delivery } = await setup(api);
      await api.db.update(deliveries).set({ state }).where(eq(deliveries.id, delivery.id));
      expectProblem(await complete(api, token, delivery.id), 400, 'invalid_state_transition');
    });

    it.each(['InProgress', 'Held'] as const)('refuses open scans: a scannable line in %s blocks with 400', async (state) => {
      const { token, delivery, items } = await setup(api);
      await api.db.update(deliveryItems).set({ state, scannedQuantity: 1 }).where(eq(deliveryItems.id, items[0].id));
      const response = await complete(api, token, delivery.id);
      expectProblem(response, 400, 'validation');
      expect(response.body.detail).toMatch(/open scans/i);
      expect(response.body.errors[0].path).toBe(`positions.${items[0].id}`);
      expect((await stateOf(api, delivery.id)).state).toBe('active');
    });

    it('lets removed lines and non-scannable lines pass', async () => {
      const { token, delivery } = await setup(api, {
        positions: [
          { scannable: true, quantity: 3, state: 'Removed', scannedQuantity: 0 },
          { scannable: true, quantity: 2, state: 'Done' },
          { scannable: false, quantity: 1, state: 'InProgress', scannedQuantity: 0 },
        ],
      });
      expect((await complete(api, token, delivery.id)).status).toBe(200);
    });

    it("asks for the notes to be acknowledged only when notes exist, and keeps only the delivery's own acknowledged notes", async () => {
      const { token, delivery } = await setup(api);
      const note = await api.post(`/deliveries/${delivery.id}/notes`, { text: 'Hund im Hof' }, { token });
      expect(note.status).toBe(200);
      const other = await setup(api);
      const foreign = await api.post(`/deliveries/${other.delivery.id}/notes`, { text: 'fremd' }, { token: other.token });
      const refused = await complete(api, token, delivery.id);
      expectProblem(refused, 400, 'validation');
      expect(refused.body.errors[0].path).toBe('acknowledgements.notesAcknowledged');
      expectProblem(
        await complete(api, token, delivery.id, { acknowledgements: { receiptConfirmed: true, notesAcknowledged: false } }),
        400,
        'validation',
      );

      // A deleted (unknown) note and another driver's note are no notes of this delivery.
      const noteIds = [randomUUID(), foreign.body.note.id, note.body.note.id];
      const accepted = await complete(api, token, delivery.id, {
        acknowledgements: { receiptConfirmed: true, notesAcknowledged: true, acknowledgedNoteIds: noteIds },
      });
      expect(accepted.status).toBe(200);
      expect(await completionOf(api, delivery.id)).toMatchObject({ notesAcknowledged: true, acknowledgedNoteIds: [note.body.note.id] });
    });

    it('refuses a receipt that is not confirmed with 400', async () => {
      const { token, delivery } = await setup(api);
      const response = await complete(api, token, delivery.id, { acknowledgements: { receiptConfirmed: false } });
      expectProblem(response, 400, 'validation');
      expect(response.body.errors[0].path).toBe('acknowledgements.receiptConfirmed');
    });

    it('checks the state before the scans, and the scans before the notes and the receipt', async () => {
      const { token, delivery, items } = await setup(api);
      await api.post(`/deliveries/${delivery.id}/notes`, { text: 'Hinweis' }, { token });
      await api.db.update(deliveryItems).set({ state: 'Held' }).where(eq(deliveryItems.id, items[0].id));
      const ack = { acknowledgements: { receiptConfirmed: false } };
      expect((await complete(api, token, delivery.id, ack)).body.detail).toMatch(/open scans/i);
      await api.db.update(deliveries).set({ state: 'held' }).where(eq(deliveries.id, delivery.id));
      expect((await complete(api, token, delivery.id, ack)).body.code).toBe('invalid_state_transition');
      await api.db.update(deliveries).set({ state: 'active' }).where(eq(deliveries.id, delivery.id));
      await api.db.update(deliveryItems).set({ state: 'Done' }).where(eq(deliveryItems.id, items[0].id));
      expect((await complete(api, token, delivery.id, ack)).body.errors[0].path).toBe('acknowledgements.notesAcknowledged');
    });
  });

  describe('the payment gate', () => {
    // Two positions: 2 x 12.50 + 1 x 5.00; the ERP says 30.00 are open.
    const open = { openAmountCents: 3000 };

    it('requires paymentCollected for an on-site method with an open amount, and computes the amount itself', async () => {
      const { token, delivery } = await setup(api, open);
      const cash = await paymentMethod(api, token, true);
      await api.db.update(deliveries).set({ paymentMethodId: cash }).where(eq(deliveries.id, delivery.id));
      const refused = await complete(api, token, delivery.id);
      expectProblem(refused, 400, 'validation');
      expect(refused.body.errors[0].path).toBe('acknowledgements.paymentCollected');

      const accepted = await complete(api, token, delivery.id, { acknowledgements: { receiptConfirmed: true, paymentCollected: true } });
      expect(accepted.status).toBe(200);
      expect(await completionOf(api, delivery.id)).toMatchObject({
        paymentCollected: true,
        collectedAmountCents: 3000,
        paymentMethodId: cash,
        paymentId: null,
      });
    });

    it('lets a logged payment satisfy the gate and links it, taking its method', async () => {
      const setupResult = await setup(api, open);
      const cash = await paymentMethod(api, setupResult.token, true);
      await api.db.update(deliveries).set({ paymentMethodId: cash }).where(eq(deliveries.id, setupResult.delivery.id));
      const card = await paymentMethod(api, setupResult.token, true);
      const paid = await api.post(
        `/deliveries/${setupResult.delivery.id}/payment`,
        { clientEventId: randomUUID(), expectedAmountCents: 3000, paymentMethodId: card },
        { token: setupResult.token },
      );
      expect(paid.status).toBe(200);
      // The logged payment supplies the method, whatever the completion names.
      const invoice = await paymentMethod(api, setupResult.token, false);
      const response = await complete(api, setupResult.token, setupResult.delivery.id, {
        acknowledgements: { receiptConfirmed: true, paymentMethodId: invoice },
      });
      expect(response.status).toBe(200);
      expect(await completionOf(api, setupResult.delivery.id)).toMatchObject({
        paymentId: paid.body.payment.id,
        paymentMethodId: card,
        paymentCollected: true,
        collectedAmountCents: 3000,
      });
      expect(response.body.delivery.paymentMethodId).toBe(card);
    });

    it('needs no confirmation for a method that is not collected on site, nor without an open amount', async () => {
      const first = await setup(api, open);
      const invoice = await paymentMethod(api, first.token, false);
      await api.db.update(deliveries).set({ paymentMethodId: invoice }).where(eq(deliveries.id, first.delivery.id));
      expect((await complete(api, first.token, first.delivery.id)).status).toBe(200);
      expect(await completionOf(api, first.delivery.id)).toMatchObject({
        paymentMethodId: invoice,
        collectedAmountCents: 0,
        paymentCollected: false,
      });

      const second = await setup(api, { openAmountCents: 0 });
      const cash = await paymentMethod(api, second.token, true);
      await api.db.update(deliveries).set({ paymentMethodId: cash }).where(eq(deliveries.id, second.delivery.id));
      expect((await complete(api, second.token, second.delivery.id)).status).toBe(200);
    });

    it('uses the payment method chosen at completion instead of the stored one', async () => {
      const { token, delivery } = await setup(api, open);
      const invoice = await paymentMethod(api, token, false);
      const cash = await paymentMethod(api, token, true);
      await api.db.update(deliveries).set({ paymentMethodId: invoice }).where(eq(deliveries.id, delivery.id));
      const refused = await complete(api, token, delivery.id, { acknowledgements: { receiptConfirmed: true, paymentMethodId: cash } });
      expect(refused.body.errors[0].path).toBe('acknowledgements.paymentCollected');
      const completed = await complete(api, token, delivery.id, {
        acknowledgements: { receiptConfirmed: true, paymentMethodId: cash, paymentCollected: true },
      });
      expect(completed.status).toBe(200);
      expect(completed.body.delivery.paymentMethodId).toBe(cash);
      expect((await completionOf(api, delivery.id)).paymentMethodId).toBe(cash);
      const [stored] = await api.db.select().from(deliveries).where(eq(deliveries.id, delivery.id));
      expect(stored.paymentMethodId).toBe(cash);
    });

    it('refuses an unknown or inactive paymentMethodId with 400', async () => {
      const { token, delivery } = await setup(api);
      const inactive = await paymentMethod(api, token, false, false);
      for (const paymentMethodId of [randomUUID(), inactive]) {
        const response = await complete(api, token, delivery.id, { acknowledgements: { receiptConfirmed: true, paymentMethodId } });
        expectProblem(response, 400, 'validation');
        expect(response.body.errors[0].path).toBe('acknowledgements.paymentMethodId');
      }
    });
  });

  describe('internal note and car', () => {
    it('trims the internal note and stores whitespace as none', async () => {
      const first = await setup(api);
      await complete(api, first.token, first.delivery.id, {
        acknowledgements: { receiptConfirmed: true, internalNote: '  Hoftor klemmt  ' },
      });
      expect((await completionOf(api, first.delivery.id)).internalNote).toBe('Hoftor klemmt');
      const second = await setup(api);
      await complete(api, second.token, second.delivery.id, { acknowledgements: { receiptConfirmed: true, internalNote: ' \n\t ' } });
      expect((await completionOf(api, second.delivery.id)).internalNote).toBeNull();
    });

    it('accepts 2000 characters of internal note and refuses 2001 with 400', async () => {
      const { token, delivery } = await setup(api);
      const tooLong = await complete(api, token, delivery.id, {
        acknowledgements: { receiptConfirmed: true, internalNote: 'x'.repeat(2001) },
      });
      expectProblem(tooLong, 400, 'validation');
      expect(tooLong.body.errors[0].path).toBe('acknowledgements.internalNote');
      expect(
        (await complete(api, token, delivery.id, { acknowledgements: { receiptConfirmed: true, internalNote: ` ${'x'.repeat(2000)} ` } }))
          .status,
      ).toBe(200);
    });

    it('counts the internal note in characters, not UTF-16 units', async () => {
      const { token, delivery } = await setup(api);
      expect(
        (await complete(api, token, delivery.id, { acknowledgements: { receiptConfirmed: true, internalNote: '📦'.repeat(2000) } })).status,
      ).toBe(200);
      expect((await completionOf(api, delivery.id)).internalNote).toBe('📦'.repeat(2000));
    });

    it('refuses an internal note with a NUL character with 400 and completes nothing', async () => {
      const { token, delivery } = await setup(api);
      const refused = await complete(api, token, delivery.id, {
        acknowledgements: { receiptConfirmed: true, internalNote: 'Hof\u0000tor' },
      });
      expectProblem(refused, 400, 'validation');
      expect(refused.body.errors).toEqual([
        { path: 'acknowledgements.internalNote', message: 'must not contain NUL characters or unpaired surrogates' },
      ]);
      expect(await completionOf(api, delivery.id)).toBeUndefined();
    });

    it('refuses a car of another account with 400 and stores an own car', async () => {
      const { token, delivery } = await setup(api);
      const other = await setup(api);
      const foreignCar = (await api.post('/me/cars', { plate: `F-${randomUUID().slice(0, 6)}` }, { token: other.token })).body.car.id;
      const ownCar = (await api.post('/me/cars', { plate: `O-${randomUUID().slice(0, 6)}` }, { token })).body.car.id;
      const refused = await complete(api, token, delivery.id, { acknowledgements: { receiptConfirmed: true, authorCarId: foreignCar } });
      expectProblem(refused, 400, 'validation');
      expect(refused.body.errors[0].path).toBe('acknowledgements.authorCarId');
      expectProblem(
        await complete(api, token, delivery.id, { acknowledgements: { receiptConfirmed: true, authorCarId: randomUUID() } }),
        400,
        'validation',
      );
      expect((await complete(api, token, delivery.id, { acknowledgements: { receiptConfirmed: true, authorCarId: ownCar } })).status).toBe(
        200,
      );
      expect((await completionOf(api, delivery.id)).authorCarId).toBe(ownCar);
    });
  });

  describe('replay', () => {
    it('answers a repeated completion with the same clientEventId with 200 and the current delivery, once', async () => {
      const { token, delivery } = await setup(api);
      const clientEventId = randomUUID();
      const parts = { acknowledgements: { receiptConfirmed: true, clientEventId } };
      const first = await complete(api, token, delivery.id, parts);
      expect(first.status).toBe(200);
      const again = await complete(api, token, delivery.id, parts);
      expect(again.status).toBe(200);
      expect(again.body.delivery).toMatchObject({ id: delivery.id, state: 'completed', completedAt: first.body.delivery.completedAt });
      const events = await api.db.select().from(processedEvents).where(eq(processedEvents.eventId, clientEventId));
      expect(events).toHaveLength(1);
      const rows = await api.db
        .select()
        .from(attachments)
        .where(and(eq(attachments.deliveryId, delivery.id), eq(attachments.kind, 'customer_signature')));
      expect(rows).toHaveLength(1);
    });

    it('refuses a second completion with another or no clientEventId with 400 invalid_state_transition', async () => {
      const { token, delivery } = await setup(api);
      expect(
        (await complete(api, token, delivery.id, { acknowledgements: { receiptConfirmed: true, clientEventId: randomUUID() } })).status,
      ).toBe(200);
      expectProblem(
        await complete(api, token, delivery.id, { acknowledgements: { receiptConfirmed: true, clientEventId: randomUUID() } }),
        400,
        'invalid_state_transition',
      );
      expectProblem(await complete(api, token, delivery.id), 400, 'invalid_state_transition');
    });

    it('refuses a clientEventId already used for another delivery with 400, naming the field', async () => {
      const { token, tour } = await setup(api, { deliveries: 2 });
      const clientEventId = randomUUID();
      const [a, b] = tour.deliveries.map((d) => d.delivery);
      expect((await complete(api, token, a.id, { acknowledgements: { receiptConfirmed: true, clientEventId } })).status).toBe(200);
      const refused = await complete(api, token, b.id, { acknowledgements: { receiptConfirmed: true, clientEventId } });
      expectProblem(refused, 400, 'validation');
      expect(refused.body.errors).toEqual([expect.objectContaining({ path: 'acknowledgements.clientEventId' })]);
      expect((await stateOf(api, b.id)).state).toBe('active');
    });

    it('completes once when the same completion arrives twice at the same moment', async () => {
      const { token, delivery } = await setup(api);
      const parts = { acknowledgements: { receiptConfirmed: true, clientEventId: randomUUID() } };
      const responses = await Promise.all([complete(api, token, delivery.id, parts), complete(api, token, delivery.id, parts)]);
      expect(responses.map((r) => r.status)).toEqual([200, 200]);
      const signatures = await api.db
        .select()
        .from(attachments)
        .where(and(eq(attachments.deliveryId, delivery.id), eq(attachments.kind, 'driver_signature')));
      expect(signatures).toHaveLength(1);
    });
  });
});
