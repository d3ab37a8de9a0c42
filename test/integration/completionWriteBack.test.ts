import { randomUUID } from 'node:crypto';
import { http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { completions } from '../../server/db/schema.js';
import type { DemoErp } from '../../server/integrations/erp/demo.js';
import type { CompletionWriteBack, ErpDocument, ErpGateway } from '../../server/integrations/erp/gateway.js';
import { upstream } from '../../server/errors.js';
import { openDatabase } from '../../server/db/client.js';
import { backoffMs } from '../../server/engine/completion/writeBack.js';
import { createPostgresDatabase, databaseKinds } from '../helpers/databases.js';
import { expectProblem } from '../helpers/problems.js';
import { startTestServer, useTestServer, type TestServer } from '../helpers/server.js';
import { complete, completionOf, setup, stateOf } from '../helpers/completions.js';

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
