import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import { attachments, changeLog, deliveries } from '../../server/db/schema.js';
import type { DemoErp } from '../../server/integrations/erp/demo.js';
import { databaseKinds } from '../helpers/databases.js';
import { expectProblem } from '../helpers/problems.js';
import { useTestServer } from '../helpers/server.js';
import { blob, completionForm, noisyPng, rawPng, signaturePng } from '../helpers/uploads.js';
import sharp from 'sharp';
import { complete, completionOf, setup, stateOf } from '../helpers/completions.js';

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
