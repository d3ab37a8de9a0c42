import { randomUUID } from 'node:crypto';
import { http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { and, eq, sql } from 'drizzle-orm';
import { attachments, changeLog, completions, deliveries, deliveryItems, processedEvents } from '../../server/db/schema.js';
import type { DemoErp } from '../../server/integrations/erp/demo.js';
import type { CompletionWriteBack, ErpDocument, ErpGateway } from '../../server/integrations/erp/gateway.js';
import { upstream } from '../../server/errors.js';
import { openDatabase } from '../../server/db/client.js';
import { backoffMs } from '../../server/engine/completion/writeBack.js';
import { createPostgresDatabase, databaseKinds } from '../helpers/databases.js';
import { newTour, type NewTourOptions } from '../helpers/factories.js';
import { expectProblem } from '../helpers/problems.js';
import { startTestServer, useTestServer, type TestServer } from '../helpers/server.js';
import { blob, completionForm, noisyPng, rawPng, signaturePng, type CompletionParts } from '../helpers/uploads.js';
import sharp from 'sharp';

let nextAccount = 61_000;

async function setup(api: TestServer, options: Partial<NewTourOptions> = {}) {
  const accountId = nextAccount++;
  const token = await api.token(accountId);
  const tour = await newTour(api.db, { accountId, ...options });
  const { delivery, items } = tour.deliveries[0];
  return { accountId, token, tour, delivery, items };
}

const complete = async (api: TestServer, token: string, deliveryId: string, parts: CompletionParts = {}) =>
  api.post(`/deliveries/${deliveryId}/complete`, await completionForm(parts), { token });

async function completionOf(api: TestServer, deliveryId: string) {
  const [row] = await api.db.select().from(completions).where(eq(completions.deliveryId, deliveryId));
  return row;
}

async function stateOf(api: TestServer, deliveryId: string) {
  const [row] = await api.db
    .select({ state: deliveries.state, completedAt: deliveries.completedAt })
    .from(deliveries)
    .where(eq(deliveries.id, deliveryId));
  return row;
}

async function paymentMethod(api: TestServer, token: string, collectOnSite: boolean, active = true) {
  const created = await api.post(
    '/payment-methods',
    { code: `PM-${randomUUID().slice(0, 8)}`, name: collectOnSite ? 'Barzahlung' : 'Rechnung', collectOnSite },
    { token },
  );
  if (!active) await api.patch(`/payment-methods/${created.body.paymentMethod.id}`, { active: false }, { token });
  return created.body.paymentMethod.id as string;
}

describe.each(databaseKinds)('completion on %s', (kind) => {
  const api = useTestServer(kind);

  describe('a complete delivery', () => {
    it('completes an active delivery: state, signatures, completion row, report and change records in one go', async () => {
      const { token, delivery } = await setup(api);
      const response = await complete(api, token, delivery.id);
      expect(response.status).toBe(200);
      expect(response.body.delivery).toMatchObject({ id: delivery.id, state: 'completed' });
      expect(response.body.delivery.completedAt).toEqual(expect.any(String));

      const completion = await completionOf(api, delivery.id);
      expect(completion).toMatchObject({ notesAcknowledged: false, internalNote: null, paymentId: null, collectedAmountCents: 0 });
      const rows = await api.db.select().from(attachments).where(eq(attachments.deliveryId, delivery.id));
      expect(rows.map((r) => r.kind).sort()).toEqual(['customer_signature', 'delivery_report', 'driver_signature']);
      for (const row of rows) expect(row.reference.startsWith('~')).toBe(true);
      expect(completion.customerSignatureId).toBe(rows.find((r) => r.kind === 'customer_signature')!.id);
      expect(completion.reportAttachmentId).toBe(rows.find((r) => r.kind === 'delivery_report')!.id);

      const changes = await api.db.select({ entity: changeLog.entity }).from(changeLog).where(eq(changeLog.tourId, delivery.tourId));
      expect(changes.map((c) => c.entity)).toEqual(expect.arrayContaining(['delivery', 'completion', 'attachment']));
      expect(changes.filter((c) => c.entity === 'attachment')).toHaveLength(3);
    });

    it('accepts the acknowledgements as a JSON file part', async () => {
      const { token, delivery } = await setup(api);
      const response = await complete(api, token, delivery.id, {
        acknowledgementsAsFile: true,
        acknowledgements: { receiptConfirmed: true, internalNote: 'per Datei' },
      });
      expect(response.status).toBe(200);
      expect((await completionOf(api, delivery.id)).internalNote).toBe('per Datei');
    });

    it('writes delivered-at, state, payment term and money credit back to the ERP, never line quantities', async () => {
      const { token, delivery } = await setup(api, { paymentTerm: '30 Tage netto' });
      await api.db.update(deliveries).set({ creditAmountCents: 2000, creditReason: 'Verspätung' }).where(eq(deliveries.id, delivery.id));
      expect((await complete(api, token, delivery.id)).status).toBe(200);
      const erp = api.ctx.erp as DemoErp;
      const pushed = erp.writeBacks.find((w) => w.document.belegnummer === delivery.belegnummer);
      const completion = await completionOf(api, delivery.id);
      expect(pushed).toEqual({
        document: { belegartId: delivery.belegartId, belegnummer: delivery.belegnummer },
        writeBack: {
          deliveredAt: completion.completedAt.toISOString(),
          state: 'completed',
          paymentTerm: '30 Tage netto',
          creditAmountCents: 2000,
          report: expect.objectContaining({
            fileName: `Lieferbericht-${delivery.belegnummer}.pdf`,
            sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
          }),
        },
        idempotencyKey: `completion-${delivery.id}`,
      });
      expect(completion).toMatchObject({ erpPushStatus: 'succeeded', erpPushAttempts: 1, erpPushError: null, erpNextAttemptAt: null });
    });
  });

  it('counts a completion sent later from an outbox when it happened on the device, within a week and not ahead of now', async () => {
    const importedAt = new Date(Date.now() - 24 * 3600_000);
    const { token, delivery } = await setup(api);
    await api.db.update(deliveries).set({ createdAt: importedAt }).where(eq(deliveries.id, delivery.id));
    const signedAt = new Date(Date.now() - 3 * 3600_000).toISOString();
    const response = await complete(api, token, delivery.id, { acknowledgements: { receiptConfirmed: true, occurredAt: signedAt } });
    expect(response.body.delivery.completedAt).toBe(signedAt);
    const completion = await completionOf(api, delivery.id);
    expect(completion.completedAt.toISOString()).toBe(signedAt);
    expect(completion.receivedAt.getTime()).toBeGreaterThan(Date.parse(signedAt) + 3 * 3600_000 - 60_000);
    const pushed = (api.ctx.erp as DemoErp).writeBacks.find((w) => w.document.belegnummer === delivery.belegnummer);
    expect(pushed?.writeBack.deliveredAt).toBe(signedAt);

    // Ahead of now, more than a week back, and before the delivery was imported: no working clock shows that.
    for (const occurredAt of [
      new Date(Date.now() + 3600_000),
      new Date(Date.now() - 8 * 24 * 3600_000),
      new Date(importedAt.getTime() - 60_000),
    ].map((d) => d.toISOString())) {
      const other = await setup(api);
      await api.db.update(deliveries).set({ createdAt: importedAt }).where(eq(deliveries.id, other.delivery.id));
      const before = Date.now();
      const answer = await complete(api, other.token, other.delivery.id, { acknowledgements: { receiptConfirmed: true, occurredAt } });
      expect(Date.parse(answer.body.delivery.completedAt)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(answer.body.delivery.completedAt)).toBeLessThanOrEqual(Date.now());
    }
    const bad = await setup(api);
    expectProblem(
      await complete(api, bad.token, bad.delivery.id, { acknowledgements: { receiptConfirmed: true, occurredAt: 'gestern' } }),
      400,
      'validation',
    );
  });

  describe('requests', () => {
    it('answers 404 for an unknown delivery and for a delivery of another account', async () => {
      const { delivery } = await setup(api);
      const other = await setup(api);
      expectProblem(await complete(api, other.token, delivery.id), 404, 'not_found');
      expectProblem(await complete(api, other.token, randomUUID()), 404, 'not_found');
      expect((await stateOf(api, delivery.id)).state).toBe('active');
    });

    it('refuses an invalid delivery id with 400 and a missing token with 401', async () => {
      const { token, delivery } = await setup(api);
      expectProblem(await complete(api, token, 'not-a-uuid'), 400, 'validation');
      const response = await api.post(`/deliveries/${delivery.id}/complete`, await completionForm());
      expectProblem(response, 401, 'unauthorized');
    });

    it.each([
      ['customer_signature', { customer: null }],
      ['driver_signature', { driver: null }],
      ['customer_signature', { customer: Buffer.alloc(0) }],
    ] as const)('refuses a missing or empty %s with 400', async (part, parts) => {
      const { token, delivery } = await setup(api);
      const response = await complete(api, token, delivery.id, parts);
      expectProblem(response, 400, 'validation');
      expect(response.body.errors[0].path).toBe(part);
      expect(await completionOf(api, delivery.id)).toBeUndefined();
    });

    it('refuses a signature that is not a real PNG, whatever its name and type say', async () => {
      const { token, delivery } = await setup(api);
      const jpeg = await (
        await import('sharp')
      )
        .default(await signaturePng())
        .jpeg()
        .toBuffer();
      expectProblem(await complete(api, token, delivery.id, { customer: jpeg }), 400, 'validation');
      const fake = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('not really an image')]);
      expectProblem(await complete(api, token, delivery.id, { driver: fake }), 400, 'validation');
      expect((await stateOf(api, delivery.id)).state).toBe('active');
    });

    it.each([
      ['a valid header over broken pixel data', () => rawPng(40, 20, { filter: 7 })],
      ['fewer rows than the header says', () => rawPng(400, 400, { rows: 3 })],
      ['more than 4096 × 4096 pixels', () => rawPng(5000, 5000, { rows: 1 })],
    ])('refuses a signature PNG with %s with 400, and the server lives on', async (_what, png) => {
      const { token, delivery } = await setup(api);
      expect((await sharp(rawPng(40, 20)).metadata()).format).toBe('png');
      const response = await complete(api, token, delivery.id, { customer: png() });
      expectProblem(response, 400, 'validation');
      expect(response.body.errors[0].path).toBe('customer_signature');
      expect((await stateOf(api, delivery.id)).state).toBe('active');
      expect((await api.get('/health')).status).toBe(200);
    });

    it.each([
      ['more than 4096 × 4096 pixels', () => rawPng(5000, 5000, { rows: 1 })],
      ['more pixels than sharp reads by default (30000 × 30000)', () => rawPng(30000, 30000, { rows: 1 })],
    ])('refuses a signature PNG of %s as too large with 400, not as no PNG', async (_what, png) => {
      const { token, delivery } = await setup(api);
      const response = await complete(api, token, delivery.id, { driver: png() });
      expectProblem(response, 400, 'validation');
      expect(response.body.detail).toBe('The driver_signature is too large');
      expect(response.body.errors).toEqual([{ path: 'driver_signature', message: expect.stringContaining('at most 16777216 pixels') }]);
      expect((await stateOf(api, delivery.id)).state).toBe('active');
    });

    it.each([
      ['no acknowledgements', null],
      ['acknowledgements that are not JSON', '{receiptConfirmed: true'],
      ['acknowledgements without receiptConfirmed', {}],
      ['a string as receiptConfirmed', { receiptConfirmed: 'yes' }],
      ['an invalid authorCarId', { receiptConfirmed: true, authorCarId: 'car-1' }],
      ['an invalid clientEventId', { receiptConfirmed: true, clientEventId: 42 }],
      [
        'more than 1000 acknowledgedNoteIds',
        { receiptConfirmed: true, acknowledgedNoteIds: Array.from({ length: 1001 }, () => randomUUID()) },
      ],
    ])('refuses %s with 400', async (_what, acknowledgements) => {
      const { token, delivery } = await setup(api);
      expectProblem(await complete(api, token, delivery.id, { acknowledgements }), 400, 'validation');
    });

    it('refuses a request without a body with 400, naming the missing acknowledgements', async () => {
      const { token, delivery } = await setup(api);
      const response = await api.post(`/deliveries/${delivery.id}/complete`, undefined, { token });
      expectProblem(response, 400, 'validation');
      expect(response.body.errors).toContainEqual(expect.objectContaining({ path: 'acknowledgements' }));
    });

    it.each(['customer_signature', 'acknowledgements'])(
      'refuses a second %s part with 400 naming it, and completes nothing',
      async (part) => {
        const { token, delivery } = await setup(api);
        const form = await completionForm();
        if (part === 'acknowledgements') form.append(part, JSON.stringify({ receiptConfirmed: false }));
        else form.append(part, blob(await signaturePng(), 'image/png'), 'again.png');
        const response = await api.post(`/deliveries/${delivery.id}/complete`, form, { token });
        expectProblem(response, 400, 'validation');
        expect(response.body.errors).toEqual([{ path: part, message: 'sent more than once' }]);
        expect((await stateOf(api, delivery.id)).state).toBe('active');
      },
    );

    it('refuses a body that is not multipart with 415', async () => {
      const { token, delivery } = await setup(api);
      expectProblem(
        await api.post(`/deliveries/${delivery.id}/complete`, { receiptConfirmed: true }, { token }),
        415,
        'unsupported_media_type',
      );
    });

    it('refuses a broken multipart body with 400', async () => {
      const { token, delivery } = await setup(api);
      const response = await api.post(`/deliveries/${delivery.id}/complete`, '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb', {
        token,
        headers: { 'content-type': 'multipart/form-data; boundary=x' },
      });
      expectProblem(response, 400, 'validation');
      const noBoundary = await api.post(`/deliveries/${delivery.id}/complete`, 'x', {
        token,
        headers: { 'content-type': 'multipart/form-data' },
      });
      expectProblem(noBoundary, 400, 'validation');
    });
  });

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

  describe('all or nothing', () => {
    it('leaves no completion, no attachment and an active delivery when the transaction fails', async () => {
      await api.db.execute(sql`CREATE OR REPLACE FUNCTION test_fail_completion() RETURNS trigger AS $$
        BEGIN RAISE EXCEPTION 'injected failure'; END $$ LANGUAGE plpgsql`);
      await api.db.execute(sql`CREATE OR REPLACE TRIGGER test_fail_completion BEFORE INSERT ON completions
        FOR EACH ROW WHEN (NEW.internal_note = 'fail the transaction') EXECUTE FUNCTION test_fail_completion()`);
      const { token, delivery } = await setup(api);
      const response = await complete(api, token, delivery.id, {
        acknowledgements: { receiptConfirmed: true, internalNote: 'fail the transaction', clientEventId: randomUUID() },
      });
      expectProblem(response, 500, 'internal');
      expect(response.text).not.toMatch(/injected|at .*\.ts/);
      expect(await stateOf(api, delivery.id)).toEqual({ state: 'active', completedAt: null });
      expect(await completionOf(api, delivery.id)).toBeUndefined();
      expect(await api.db.select().from(attachments).where(eq(attachments.deliveryId, delivery.id))).toEqual([]);
      expect(await api.db.select().from(changeLog).where(eq(changeLog.entityId, delivery.id))).toEqual([]);
      // The same completion goes through once the cause is gone.
      expect((await complete(api, token, delivery.id)).status).toBe(200);
    });
  });
});

/** An ERP whose write-back fails until told otherwise, recording every call. */
function switchableErp() {
  const calls: { document: ErpDocument; writeBack: CompletionWriteBack; idempotencyKey: string }[] = [];
  const erp = {
    failing: true,
    calls,
    async fetchTours() {
      return { tours: [], refused: [] };
    },
    /** While set, a write-back waits for it to resolve: an ERP that hangs. */
    hanging: undefined as Promise<void> | undefined,
    async pushCompletion(document: ErpDocument, writeBack: CompletionWriteBack, idempotencyKey: string) {
      calls.push({ document, writeBack, idempotencyKey });
      await erp.hanging;
      if (erp.failing) throw upstream('ERP write-back failed: answered 503');
    },
    async pushCancellation() {},
  } satisfies ErpGateway & Record<string, unknown>;
  return erp;
}

describe.each(databaseKinds)('ERP write-back failures on %s', (kind) => {
  const erp = switchableErp();
  let api: TestServer;
  beforeAll(async () => {
    api = await startTestServer(
      kind,
      { ERP_PUSH_POLL_MS: '40', ERP_PUSH_RETRY_BASE_MS: '60', ERP_PUSH_RETRY_MAX_MS: '200', ERP_TIMEOUT_MS: '1500' },
      { erp },
    );
  });
  afterAll(() => api.close());

  it('records a failed write-back on the completion and keeps the completion', async () => {
    erp.failing = true;
    const { token, delivery } = await setup(api);
    const response = await complete(api, token, delivery.id);
    expect(response.status).toBe(200);
    expect((await stateOf(api, delivery.id)).state).toBe('completed');
    const completion = await completionOf(api, delivery.id);
    expect(completion.erpPushStatus).toBe('failed');
    expect(completion.erpPushAttempts).toBeGreaterThanOrEqual(1);
    expect(completion.erpPushError).toMatch(/503/);
    expect(completion.erpNextAttemptAt).toBeInstanceOf(Date);
    expect(completion.reportAttachmentId).not.toBeNull();
  });

  it('retries with backoff until the ERP accepts the write-back', async () => {
    erp.failing = true;
    const { token, delivery } = await setup(api);
    await complete(api, token, delivery.id);
    await expect.poll(async () => (await completionOf(api, delivery.id)).erpPushAttempts, { timeout: 5000 }).toBeGreaterThanOrEqual(3);
    erp.failing = false;
    await expect.poll(async () => (await completionOf(api, delivery.id)).erpPushStatus, { timeout: 5000 }).toBe('succeeded');
    const completion = await completionOf(api, delivery.id);
    expect(completion).toMatchObject({ erpPushError: null, erpNextAttemptAt: null });
    expect(completion.erpPushedAt).toBeInstanceOf(Date);
    const attempts = completion.erpPushAttempts;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await completionOf(api, delivery.id)).erpPushAttempts).toBe(attempts);
  });

  it('answers a completion after at most one ERP timeout while the ERP hangs, and writes back once it answers', async () => {
    erp.failing = false;
    let answer!: () => void;
    erp.hanging = new Promise((resolve) => {
      answer = resolve;
    });
    // Far beyond ERP_TIMEOUT_MS: if the request waited for the ERP, it would answer only after this.
    const released = new Promise((resolve) => setTimeout(resolve, 6000)).then(() => {
      answer();
      return 'released';
    });
    try {
      const { token, delivery } = await setup(api);
      const answered = complete(api, token, delivery.id).then((response) => response.status);
      expect(await Promise.race([answered, released])).toBe(200);
      expect(erp.calls.at(-1)!.document.belegnummer).toBe(delivery.belegnummer);
      expect((await completionOf(api, delivery.id)).erpPushStatus).not.toBe('succeeded');
      answer();
      await expect.poll(async () => (await completionOf(api, delivery.id)).erpPushStatus, { timeout: 5000 }).toBe('succeeded');
    } finally {
      erp.hanging = undefined;
      answer();
    }
  });

  it('answers push-completion with 502 while the ERP fails and 204 once it accepts', async () => {
    erp.failing = true;
    const { token, delivery } = await setup(api);
    await complete(api, token, delivery.id);
    const failed = await api.post(`/admin/push-completion?delivery_id=${delivery.id}`, undefined, { admin: true });
    expectProblem(failed, 502, 'upstream_unavailable');
    erp.failing = false;
    const calls = erp.calls.length;
    expect((await api.post(`/admin/push-completion?delivery_id=${delivery.id}`, undefined, { admin: true })).status).toBe(204);
    expect(erp.calls.length).toBeGreaterThan(calls);
    expect(erp.calls.at(-1)!.writeBack).not.toHaveProperty('quantity');
    expect((await completionOf(api, delivery.id)).erpPushStatus).toBe('succeeded');
    // The first push, any background retry and both admin retries are copies of one write-back.
    const keys = erp.calls.filter((call) => call.document.belegnummer === delivery.belegnummer).map((call) => call.idempotencyKey);
    expect(keys.length).toBeGreaterThanOrEqual(3);
    expect(new Set(keys)).toEqual(new Set([`completion-${delivery.id}`]));
  });
});

describe.each(databaseKinds)('stopping while a write-back waits for the ERP on %s', (kind) => {
  it('finishes and records the write-back before the database is closed', async () => {
    // The test's own database handle, so that it outlives the server and shows what was recorded.
    const database = await openDatabase(kind === 'postgres' ? { url: await createPostgresDatabase() } : {});
    const erp = switchableErp();
    erp.failing = false;
    let answer!: () => void;
    erp.hanging = new Promise((resolve) => {
      answer = resolve;
    });
    const api = await startTestServer(kind, { ERP_TIMEOUT_MS: '300' }, { erp, database });
    try {
      const { token, delivery } = await setup(api);
      expect((await complete(api, token, delivery.id)).status).toBe(200);
      const stopped = api.close().then(() => 'stopped');
      expect(await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, 1000, 'still stopping'))])).toBe('still stopping');
      answer();
      await stopped;
      const [completion] = await database.db.select().from(completions).where(eq(completions.deliveryId, delivery.id));
      expect(completion).toMatchObject({ erpPushStatus: 'succeeded', erpPushAttempts: 1, erpNextAttemptAt: null });
      expect(completion.reportAttachmentId).not.toBeNull();
    } finally {
      answer();
      await api.close();
      await database.close();
    }
  });
});

describe.each(databaseKinds)('write-back to the ERP over HTTP on %s', (kind) => {
  const erpUrl = 'https://erp.example.test';
  const received: { path: string; body: unknown }[] = [];
  const msw = setupServer(
    http.post(`${erpUrl}/documents/:belegartId/:belegnummer/completion`, async ({ request }) => {
      received.push({ path: new URL(request.url).pathname, body: await request.json() });
      return new HttpResponse(null, { status: 204 });
    }),
  );
  beforeAll(() => msw.listen({ onUnhandledRequest: 'bypass' }));
  afterEach(() => msw.resetHandlers());
  afterAll(() => msw.close());
  const api = useTestServer(kind, { ERP_MODE: 'http', ERP_BASE_URL: erpUrl, ERP_RETRIES: '0' });

  it('posts delivered-at, state, payment term and money credit to the document of the delivery', async () => {
    const { token, delivery } = await setup(api, { paymentTerm: '10 Tage 2 % Skonto' });
    expect((await complete(api, token, delivery.id)).status).toBe(200);
    const completion = await completionOf(api, delivery.id);
    expect(received.at(-1)).toEqual({
      path: `/documents/${delivery.belegartId}/${delivery.belegnummer}/completion`,
      body: {
        deliveredAt: completion.completedAt.toISOString(),
        state: 'completed',
        paymentTerm: '10 Tage 2 % Skonto',
        creditAmountCents: 0,
        report: expect.objectContaining({ downloadPath: `/admin/deliveries/${delivery.id}/report` }),
      },
    });
    expect(completion.erpPushStatus).toBe('succeeded');
  });

  it('records an ERP error without undoing the completion, and push-completion answers 502 until the ERP accepts', async () => {
    msw.use(http.post(`${erpUrl}/documents/:belegartId/:belegnummer/completion`, () => new HttpResponse('maintenance', { status: 503 })));
    const { token, delivery } = await setup(api);
    expect((await complete(api, token, delivery.id)).status).toBe(200);
    expect(await completionOf(api, delivery.id)).toMatchObject({ erpPushStatus: 'failed', erpPushAttempts: 1 });
    expect((await stateOf(api, delivery.id)).state).toBe('completed');
    expectProblem(
      await api.post(`/admin/push-completion?delivery_id=${delivery.id}`, undefined, { admin: true }),
      502,
      'upstream_unavailable',
    );
    expect((await completionOf(api, delivery.id)).erpPushAttempts).toBe(2);

    msw.resetHandlers();
    expect((await api.post(`/admin/push-completion?delivery_id=${delivery.id}`, undefined, { admin: true })).status).toBe(204);
    expect(await completionOf(api, delivery.id)).toMatchObject({ erpPushStatus: 'succeeded', erpPushAttempts: 3, erpPushError: null });
  });
});

describe('backoff', () => {
  it('doubles the wait with every attempt up to the maximum', () => {
    expect([1, 2, 3, 4, 5, 10].map((n) => backoffMs(n, 1000, 10_000))).toEqual([1000, 2000, 4000, 8000, 10_000, 10_000]);
  });
});

describe.each(databaseKinds)('push-completion on %s', (kind) => {
  const api = useTestServer(kind);

  it('repeats the write-back of a completed delivery with 204', async () => {
    const { token, delivery } = await setup(api);
    await complete(api, token, delivery.id);
    const erp = api.ctx.erp as DemoErp;
    const before = erp.writeBacks.filter((w) => w.document.belegnummer === delivery.belegnummer).length;
    const response = await api.post(`/admin/push-completion?delivery_id=${delivery.id}`, undefined, { admin: true });
    expect(response.status).toBe(204);
    expect(response.text).toBe('');
    expect(erp.writeBacks.filter((w) => w.document.belegnummer === delivery.belegnummer)).toHaveLength(before + 1);
  });

  it('answers 404 for an unknown delivery and for one that is not completed', async () => {
    const { delivery } = await setup(api);
    expectProblem(await api.post(`/admin/push-completion?delivery_id=${randomUUID()}`, undefined, { admin: true }), 404, 'not_found');
    expectProblem(await api.post(`/admin/push-completion?delivery_id=${delivery.id}`, undefined, { admin: true }), 404, 'not_found');
  });

  it.each(['', 'delivery_id=', 'delivery_id=abc', 'delivery_id=1234'])('refuses the query %j with 400', async (query) => {
    expectProblem(await api.post(`/admin/push-completion?${query}`, undefined, { admin: true }), 400, 'validation');
  });

  it('needs the admin key: 401 without it and with a wrong one, 403 with a driver token', async () => {
    const { token, delivery } = await setup(api);
    const path = `/admin/push-completion?delivery_id=${delivery.id}`;
    expectProblem(await api.post(path), 401, 'unauthorized');
    expectProblem(await api.post(path, undefined, { admin: 'wrong-key-wrong-key-wrong' }), 401, 'unauthorized');
    expectProblem(await api.post(path, undefined, { token }), 403, 'forbidden');
  });
});

describe.each(databaseKinds)('upload limits on %s', (kind) => {
  const api = useTestServer(kind, { UPLOAD_LIMIT_BYTES: '20000' });

  it('refuses a signature larger than UPLOAD_LIMIT_BYTES with 413 and completes nothing', async () => {
    const { token, delivery } = await setup(api);
    const big = await noisyPng(120, 120);
    expect(big.length).toBeGreaterThan(20000);
    expectProblem(await complete(api, token, delivery.id, { customer: big }), 413, 'payload_too_large');
    expect((await stateOf(api, delivery.id)).state).toBe('active');
    // The connection stays usable for the next request.
    expect((await complete(api, token, delivery.id)).status).toBe(200);
  });

  it('refuses an oversized acknowledgements field with 413', async () => {
    const { token, delivery } = await setup(api);
    const form = await completionForm({ acknowledgements: null });
    form.append('acknowledgements', JSON.stringify({ receiptConfirmed: true, internalNote: 'x'.repeat(30000) }));
    expectProblem(await api.post(`/deliveries/${delivery.id}/complete`, form, { token }), 413, 'payload_too_large');
  });
});
