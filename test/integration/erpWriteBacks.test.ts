import { createHash, randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completions, erpCancellations } from '../../server/db/schema.js';
import { CancellationWriteBack, CompletionWriteBack } from '../../shared/schemas/erp.js';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { expectProblem } from '../helpers/problems.js';
import { startRecordingErp } from '../helpers/recordingErp.js';
import { startTestServer, type ApiResponse, type TestServer } from '../helpers/server.js';
import { completionForm } from '../helpers/uploads.js';
import { expectSnakeCase } from './admin.helpers.js';

let nextAccount = 71_000;

async function completedDelivery(api: TestServer) {
  const accountId = nextAccount++;
  const token = await api.token(accountId);
  const { deliveries } = await newTour(api.db, { accountId });
  const { delivery } = deliveries[0];
  const response = await api.post(`/deliveries/${delivery.id}/complete`, await completionForm(), { token });
  expect(response.status).toBe(200);
  return { token, delivery };
}

const completionOf = async (api: TestServer, deliveryId: string) =>
  (await api.db.select().from(completions).where(eq(completions.deliveryId, deliveryId)))[0];

describe.each(databaseKinds)('ERP write-backs over HTTP on %s', (kind) => {
  let erp: Awaited<ReturnType<typeof startRecordingErp>>;
  let api: TestServer;
  beforeAll(async () => {
    erp = await startRecordingErp();
    api = await startTestServer(kind, {
      ERP_MODE: 'http',
      ERP_BASE_URL: erp.url,
      ERP_TIMEOUT_MS: '300',
      ERP_RETRIES: '1',
      ERP_PUSH_POLL_MS: '40',
      ERP_PUSH_RETRY_BASE_MS: '60',
      ERP_PUSH_RETRY_MAX_MS: '200',
      ERP_PUSH_CANCELLATIONS: 'true',
    });
  });
  afterAll(async () => {
    await api.close();
    await erp.close();
  });
  const copiesFor = (belegnummer: string, kind = 'completion') =>
    erp.writeBacks().filter((c) => c.path === `/documents/1/${encodeURIComponent(belegnummer)}/${kind}`);

  it('sends one Idempotency-Key on every copy of a write-back to a slow ERP: its attempts, the retry job and an admin push', async () => {
    // The first three copies are answered only after the timeout: the ERP may have applied them.
    let slow = 3;
    erp.state.answer = () => (slow-- > 0 ? { status: 204, delayMs: 600 } : { status: 204 });
    const { delivery } = await completedDelivery(api);
    await expect.poll(async () => (await completionOf(api, delivery.id)).erpPushStatus, { timeout: 10_000 }).toBe('succeeded');
    expect((await api.post(`/admin/push-completion?delivery_id=${delivery.id}`, undefined, { admin: true })).status).toBe(204);
    const copies = copiesFor(delivery.belegnummer);
    expect(copies.length).toBeGreaterThanOrEqual(5);
    expect(new Set(copies.map((c) => c.headers['idempotency-key']))).toEqual(new Set([`completion-${delivery.id}`]));
    expect(new Set(copies.map((c) => JSON.stringify(c.body))).size).toBe(1);
    erp.state.answer = () => ({ status: 204 });
  });

  it('names the report in the write-back, and the admin key downloads the very PDF', async () => {
    const { delivery } = await completedDelivery(api);
    await expect.poll(async () => (await completionOf(api, delivery.id)).erpPushStatus, { timeout: 5000 }).toBe('succeeded');
    const [copy] = copiesFor(delivery.belegnummer);
    expect(copy.headers['content-type']).toBe('application/json');
    const writeBack = CompletionWriteBack.parse(copy.body);
    expect(writeBack).toMatchObject({
      state: 'completed',
      paymentTerm: '14 Tage netto',
      creditAmountCents: 0,
      report: {
        fileName: `Lieferbericht-${delivery.belegnummer}.pdf`,
        contentType: 'application/pdf',
        downloadPath: `/admin/deliveries/${delivery.id}/report`,
      },
    });
    expect(writeBack.deliveredAt).toMatch(/Z$/);

    const download = await fetch(`${api.url}${writeBack.report.downloadPath}`, {
      headers: { 'x-admin-api-key': 'test-admin-key-0123456789abcdef' },
    });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('application/pdf');
    expect(download.headers.get('content-disposition')).toContain(encodeURIComponent(writeBack.report.fileName));
    const pdf = Buffer.from(await download.arrayBuffer());
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    expect(pdf.length).toBe(writeBack.report.sizeBytes);
    expect(createHash('sha256').update(pdf).digest('hex')).toBe(writeBack.report.sha256);
    expect((await api.ctx.documents.get(writeBack.report.reference)).bytes.equals(pdf)).toBe(true);
  });

  it('answers the report download 401 without the admin key, 403 to a driver, 404 for a delivery without a report, 400 for a bad id', async () => {
    const { delivery } = await completedDelivery(api);
    expectProblem(await api.get(`/admin/deliveries/${delivery.id}/report`), 401, 'unauthorized');
    expectProblem(await api.get(`/admin/deliveries/${delivery.id}/report`, { token: await api.token(nextAccount++) }), 403, 'forbidden');
    const open = (await newTour(api.db, { accountId: nextAccount++ })).deliveries[0].delivery;
    expectProblem(await api.get(`/admin/deliveries/${open.id}/report`, { admin: true }), 404, 'not_found');
    expectProblem(await api.get('/admin/deliveries/00000000-0000-4000-8000-000000000000/report', { admin: true }), 404, 'not_found');
    expectProblem(await api.get('/admin/deliveries/not-a-uuid/report', { admin: true }), 400, 'validation');
  });

  it('keeps a write-back the ERP refuses with a 4xx as rejected with its answer, shows it, does not retry it, and sends it again on an admin push', async () => {
    erp.state.answer = () => ({ status: 422, body: { error: 'Beleg gesperrt', detail: 'x'.repeat(3000) } });
    const { delivery } = await completedDelivery(api);
    await expect.poll(async () => (await completionOf(api, delivery.id)).erpPushStatus, { timeout: 5000 }).toBe('rejected');
    const rejected = await completionOf(api, delivery.id);
    expect(rejected.erpPushError).toContain('answered 422: {"error":"Beleg gesperrt"');
    expect(rejected.erpPushError!.length).toBeLessThan(700);
    expect(rejected.erpNextAttemptAt).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(copiesFor(delivery.belegnummer)).toHaveLength(1);

    const listed = await api.get('/admin/erp-write-backs?status=rejected', { admin: true });
    expect(listed.status).toBe(200);
    expectSnakeCase(listed.body);
    expect(listed.body.write_backs).toContainEqual(
      expect.objectContaining({
        kind: 'completion',
        delivery_id: delivery.id,
        belegnummer: delivery.belegnummer,
        status: 'rejected',
        attempts: 1,
        idempotency_key: `completion-${delivery.id}`,
        next_attempt_at: null,
        error: expect.stringContaining('Beleg gesperrt'),
      }),
    );
    const details = await api.get(`/admin/belege/${delivery.belegnummer}`, { admin: true });
    expect(details.body.deliveries[0].completion.erp_push).toMatchObject({ status: 'rejected', error: expect.stringContaining('422') });

    expectProblem(
      await api.post(`/admin/push-completion?delivery_id=${delivery.id}`, undefined, { admin: true }),
      502,
      'upstream_unavailable',
    );
    erp.state.answer = () => ({ status: 204 });
    expect((await api.post(`/admin/push-completion?delivery_id=${delivery.id}`, undefined, { admin: true })).status).toBe(204);
    expect(await completionOf(api, delivery.id)).toMatchObject({ erpPushStatus: 'succeeded', erpPushError: null });
    expect(new Set(copiesFor(delivery.belegnummer).map((c) => c.headers['idempotency-key']))).toEqual(
      new Set([`completion-${delivery.id}`]),
    );
    const after = await api.get('/admin/erp-write-backs', { admin: true });
    expect(after.body.write_backs.map((w: { delivery_id: string }) => w.delivery_id)).not.toContain(delivery.id);
  });

  it("sends a driver's cancellation with its time and reason, under its own key, retried like a completion", async () => {
    let failing = 1;
    erp.state.answer = (call) => (call.path.endsWith('/cancellation') && failing-- > 0 ? { status: 503 } : { status: 204 });
    const accountId = nextAccount++;
    const token = await api.token(accountId);
    const { delivery } = (await newTour(api.db, { accountId })).deliveries[0];
    expect((await api.post(`/deliveries/${delivery.id}/cancel`, { reason: '  Kunde nicht angetroffen ' }, { token })).status).toBe(200);
    await expect
      .poll(async () => (await api.db.select().from(erpCancellations).where(eq(erpCancellations.deliveryId, delivery.id)))[0]?.pushStatus, {
        timeout: 5000,
      })
      .toBe('succeeded');
    const copies = copiesFor(delivery.belegnummer, 'cancellation');
    expect(copies.length).toBeGreaterThanOrEqual(2);
    expect(new Set(copies.map((c) => c.headers['idempotency-key']))).toEqual(new Set([`cancellation-${delivery.id}`]));
    expect(CancellationWriteBack.parse(copies.at(-1)!.body)).toEqual({
      canceledAt: expect.stringMatching(/Z$/),
      state: 'canceled',
      reason: 'Kunde nicht angetroffen',
    });
    const details = await api.get(`/admin/belege/${delivery.belegnummer}`, { admin: true });
    expect(details.body.deliveries[0]).toMatchObject({
      state: 'canceled',
      completion: null,
      cancellation: { reason: 'Kunde nicht angetroffen', erp_push: { status: 'succeeded', error: null } },
    });
    expect((await api.post(`/admin/push-cancellation?delivery_id=${delivery.id}`, undefined, { admin: true })).status).toBe(204);
    expect(copiesFor(delivery.belegnummer, 'cancellation').length).toBe(copies.length + 1);
    expectProblem(await api.post(`/admin/push-cancellation?delivery_id=${randomUUID()}`, undefined, { admin: true }), 404, 'not_found');
    erp.state.answer = () => ({ status: 204 });
  });

  it.each(['?status=lost', '?limit=0', '?cursor=xyz', '?limit=1001'])('refuses the write-back list query %s with 400', async (query) => {
    expectProblem(await api.get(`/admin/erp-write-backs${query}`, { admin: true }), 400, 'validation');
  });

  it('pages the write-back list with a Link to the next page', async () => {
    erp.state.answer = () => ({ status: 422 });
    const first = await completedDelivery(api);
    const second = await completedDelivery(api);
    for (const { delivery } of [first, second])
      await expect.poll(async () => (await completionOf(api, delivery.id)).erpPushStatus, { timeout: 5000 }).toBe('rejected');
    const whole = (await api.get('/admin/erp-write-backs?status=rejected', { admin: true })).body.write_backs;
    const paged: unknown[] = [];
    let next: string | null = '/admin/erp-write-backs?status=rejected&limit=1';
    while (next) {
      const page: ApiResponse = await api.get(next, { admin: true });
      expect(page.body.count).toBeLessThanOrEqual(1);
      paged.push(...page.body.write_backs);
      next = page.headers.get('link')?.match(/^<([^>]+)>/)?.[1] ?? null;
    }
    expect(paged).toEqual(whole);
    expect(whole.length).toBeGreaterThanOrEqual(2);
    erp.state.answer = () => ({ status: 204 });
  });
});

describe.each(databaseKinds)('cancellations with ERP_PUSH_CANCELLATIONS off (the default) on %s', (kind) => {
  let erp: Awaited<ReturnType<typeof startRecordingErp>>;
  let api: TestServer;
  beforeAll(async () => {
    erp = await startRecordingErp();
    api = await startTestServer(kind, { ERP_MODE: 'http', ERP_BASE_URL: erp.url, ERP_PUSH_POLL_MS: '40' });
  });
  afterAll(async () => {
    await api.close();
    await erp.close();
  });

  it('sends nothing to an ERP that knows only completions, and the admin push says it is off', async () => {
    const accountId = nextAccount++;
    const token = await api.token(accountId);
    const { delivery } = (await newTour(api.db, { accountId })).deliveries[0];
    expect((await api.post(`/deliveries/${delivery.id}/cancel`, { reason: 'Ware beschädigt' }, { token })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(erp.writeBacks()).toEqual([]);
    expectProblem(await api.post(`/admin/push-cancellation?delivery_id=${delivery.id}`, undefined, { admin: true }), 404, 'not_found');
  });
});
