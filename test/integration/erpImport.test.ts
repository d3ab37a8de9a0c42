import { asc, count, eq, inArray } from 'drizzle-orm';
import { http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { changeLog, deliveries, erpImportRuns, paymentMethods, tours } from '../../server/db/schema.js';
import { generateDemoTours } from '../../server/integrations/erp/demoData.js';
import { IMPORT_LOCK, runImport } from '../../server/jobs/erpImport.js';
import { startImportJobs } from '../../server/jobs/scheduler.js';
import type { StartOptions } from '../../server/server.js';
import { berlinDate } from '../../shared/rules/calendar.js';
import { databaseKinds } from '../helpers/databases.js';
import { gatedErp } from '../helpers/gatedErp.js';
import { startTestServer, useTestServer, type TestServer } from '../helpers/server.js';
import { tourPayload } from '../helpers/tourPayloads.js';

const ERP = 'http://erp.test';
const msw = setupServer();
beforeAll(() => msw.listen({ onUnhandledRequest: 'bypass' }));
afterEach(() => msw.resetHandlers());
afterAll(() => msw.close());

const httpErp = { ERP_MODE: 'http', ERP_BASE_URL: ERP, ERP_RETRIES: '0', ERP_TIMEOUT_MS: '2000' };

/** An ERP whose tour read waits until the test lets it answer. */
describe.each(databaseKinds)('ERP import on %s', (kind) => {
  const api = useTestServer(kind);

  const runsOf = (server: TestServer, date: string) =>
    server.db.select().from(erpImportRuns).where(eq(erpImportRuns.targetDate, date)).orderBy(asc(erpImportRuns.startedAt));
  const changeCount = async () => (await api.db.select({ n: count() }).from(changeLog))[0].n;

  /** A second instance on the same database. */
  function secondInstance(first: TestServer, env: Record<string, string> = {}, options: StartOptions = {}) {
    return kind === 'postgres'
      ? startTestServer(kind, { DATABASE_URL: first.ctx.config.databaseUrl!, ...env }, options)
      : startTestServer(kind, env, { database: first.ctx.database, ...options });
  }

  describe('POST /admin/import-erp', () => {
    it('imports every demo tour of the date, resolves payment codes and logs the run', async () => {
      const date = '2026-03-10';
      const expected = generateDemoTours(date);
      const response = await api.post(`/admin/import-erp?date=${date}`, undefined, { admin: true });
      expect(response.status).toBe(200);
      const deliveryCount = expected.reduce((n, t) => n + t.deliveries.length, 0);
      expect(response.body).toMatchObject({
        target_date: date,
        trigger: 'manual',
        success: true,
        skipped: false,
        error: null,
        tours: expected.length,
        tours_created: expected.length,
        deliveries_created: deliveryCount,
        deliveries_updated: 0,
      });
      expect(response.body.positions_created).toBe(
        expected.reduce((n, t) => n + t.deliveries.reduce((m, d) => m + d.positions.length, 0), 0),
      );

      const [run] = await runsOf(api, date);
      expect(run).toMatchObject({ id: response.body.run_id, trigger: 'manual', success: true, error: null });
      expect(run.finishedAt).not.toBeNull();
      expect(run.counters).toMatchObject({ tours: expected.length, deliveries_created: deliveryCount });

      const token = await api.token(1001);
      const mine = await api.get(`/me/tours?date=${date}`, { token });
      expect(mine.body.tours).toHaveLength(1);
      expect(mine.body.tours[0]).toMatchObject({ name: expected[0].name, deliveryCount: expected[0].deliveries.length });
      const codes = await api.db
        .select({ code: paymentMethods.code, collectOnSite: paymentMethods.collectOnSite })
        .from(paymentMethods)
        .where(inArray(paymentMethods.code, ['BAR', 'EC', 'RECHNUNG']))
        .orderBy(asc(paymentMethods.code));
      expect(codes).toEqual([
        { code: 'BAR', collectOnSite: true },
        { code: 'EC', collectOnSite: true },
        { code: 'RECHNUNG', collectOnSite: false },
      ]);
      const rows = await api.db
        .select({ methodId: deliveries.paymentMethodId, code: deliveries.erpPaymentMethodCode })
        .from(deliveries)
        .innerJoin(tours, eq(tours.id, deliveries.tourId))
        .where(eq(tours.tourDate, date));
      expect(rows.every((r) => r.methodId !== null && r.code !== null)).toBe(true);
    });

    it('writes nothing when the same date is imported again, but logs that run too', async () => {
      const date = '2026-03-12';
      await api.post(`/admin/import-erp?date=${date}`, undefined, { admin: true });
      const before = await changeCount();
      const again = await api.post(`/admin/import-erp?date=${date}`, undefined, { admin: true });
      const deliveryCount = generateDemoTours(date).reduce((n, t) => n + t.deliveries.length, 0);
      expect(again.body).toMatchObject({
        success: true,
        tours_created: 0,
        deliveries_created: 0,
        deliveries_updated: 0,
        deliveries_unchanged: deliveryCount,
        positions_created: 0,
        positions_updated: 0,
        positions_deleted: 0,
      });
      expect(await changeCount()).toBe(before);
      expect((await runsOf(api, date)).map((r) => r.success)).toEqual([true, true]);
    });

    it('imports today in Berlin without a date', async () => {
      const before = new Date();
      const response = await api.post('/admin/import-erp', undefined, { admin: true });
      expect(response.status).toBe(200);
      expect([berlinDate(before), berlinDate(new Date())]).toContain(response.body.target_date);
    });

    it.each(['2026-02-30', '10-03-2026', 'morgen', '2026-3-1'])('refuses the date %s with 400 and logs no run', async (date) => {
      const runs = async () => (await api.db.select({ n: count() }).from(erpImportRuns))[0].n;
      const before = await runs();
      const response = await api.post(`/admin/import-erp?date=${encodeURIComponent(date)}`, undefined, { admin: true });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation');
      expect(await runs()).toBe(before);
    });

    it('refuses a missing or wrong admin key with 401 and a driver token with 403', async () => {
      expect((await api.post('/admin/import-erp?date=2026-03-13')).status).toBe(401);
      expect((await api.post('/admin/import-erp?date=2026-03-13', undefined, { admin: 'wrong-key-0123456789abcdef' })).status).toBe(401);
      expect((await api.post('/admin/import-erp?date=2026-03-13', undefined, { token: await api.token(5990) })).status).toBe(403);
      expect(await runsOf(api, '2026-03-13')).toEqual([]);
    });
  });

  describe('ERP over HTTP', () => {
    const erpApi = useTestServer(kind, httpErp);

    it('answers 502 upstream_unavailable when the ERP fails and logs the failed run', async () => {
      msw.use(http.get(`${ERP}/tours`, () => new HttpResponse('maintenance', { status: 503 })));
      const response = await erpApi.post('/admin/import-erp?date=2026-04-01', undefined, { admin: true });
      expect(response.status).toBe(502);
      expect(response.body.code).toBe('upstream_unavailable');
      const runs = await runsOf(erpApi, '2026-04-01');
      expect(runs).toMatchObject([{ trigger: 'manual', success: false }]);
      expect(runs[0].error).toContain('503');
      expect(runs[0].finishedAt).not.toBeNull();
    });

    it('answers 502 when the ERP is unreachable', async () => {
      msw.use(http.get(`${ERP}/tours`, () => HttpResponse.error()));
      const response = await erpApi.post('/admin/import-erp?date=2026-04-02', undefined, { admin: true });
      expect(response.status).toBe(502);
      expect((await runsOf(erpApi, '2026-04-02'))[0].success).toBe(false);
    });

    it('imports the ERP tours and keeps an unknown payment code without failing', async () => {
      const tour = tourPayload(5801, { date: '2026-04-03', deliveries: 2, paymentMethodCode: 'SCHECK' });
      msw.use(http.get(`${ERP}/tours`, () => HttpResponse.json({ tours: [tour] })));
      const response = await erpApi.post('/admin/import-erp?date=2026-04-03', undefined, { admin: true });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ success: true, tours: 1, deliveries_created: 2 });
      const rows = await erpApi.db
        .select({ methodId: deliveries.paymentMethodId, code: deliveries.erpPaymentMethodCode })
        .from(deliveries)
        .where(eq(deliveries.tourId, (await erpApi.db.select().from(tours).where(eq(tours.accountId, 5801)))[0].id));
      expect(rows).toEqual([
        { methodId: null, code: 'SCHECK' },
        { methodId: null, code: 'SCHECK' },
      ]);
    });

    it('imports the tours that fit the contract, refuses the one that does not and logs the run as failed', async () => {
      const [good, bad] = [
        tourPayload(5821, { date: '2026-04-05', deliveries: 2 }),
        tourPayload(5822, { date: '2026-04-05', deliveries: 1 }),
      ];
      (bad.deliveries[0].positions[0] as { quantity: unknown }).quantity = 'viele';
      msw.use(http.get(`${ERP}/tours`, () => HttpResponse.json({ tours: [bad, good] })));
      const response = await erpApi.post('/admin/import-erp?date=2026-04-05', undefined, { admin: true });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ success: false, tours: 1, deliveries_created: 2 });
      // The driver's Personalnummer and the document number name what the ERP must fix.
      expect(response.body.error).toBe(
        `tour 1 of the answer (driver 5822, 2026-04-05) does not fit the contract: document ${bad.deliveries[0].belegartId}/${bad.deliveries[0].belegnummer} positions.0.quantity: Invalid input: expected number, received string`,
      );
      expect(await erpApi.db.select().from(tours).where(eq(tours.accountId, 5821))).toHaveLength(1);
      expect(await erpApi.db.select().from(tours).where(eq(tours.accountId, 5822))).toEqual([]);
    });

    it('refuses a tour of another day than the one asked for and imports the others', async () => {
      const [today, tomorrow] = [
        tourPayload(5831, { date: '2026-04-07', deliveries: 1 }),
        tourPayload(5832, { date: '2026-04-08', deliveries: 1 }),
      ];
      msw.use(http.get(`${ERP}/tours`, () => HttpResponse.json({ tours: [today, tomorrow] })));
      const response = await erpApi.post('/admin/import-erp?date=2026-04-07', undefined, { admin: true });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({
        success: false,
        tours: 1,
        error: 'tour 2 of the answer (driver 5832, 2026-04-08) is of 2026-04-08, not of 2026-04-07',
      });
      expect(await erpApi.db.select().from(tours).where(eq(tours.accountId, 5832))).toEqual([]);
    });

    it('answers 502 when no tour of the answer fits the contract, and logs the run as failed', async () => {
      msw.use(http.get(`${ERP}/tours`, () => HttpResponse.json({ tours: [{ x: 1 }, { driver: null }] })));
      const response = await erpApi.post('/admin/import-erp?date=2026-04-06', undefined, { admin: true });
      expect(response.status).toBe(502);
      expect(response.body).toMatchObject({
        code: 'upstream_unavailable',
        detail: expect.stringContaining('tour 2 of the answer (no driver) does not fit the contract'),
      });
      const runs = await runsOf(erpApi, '2026-04-06');
      expect(runs).toMatchObject([{ success: false, error: expect.stringContaining('tour 1 of the answer') }]);
    });

    it('evens out a day that contradicts itself, so that importing it again changes nothing', async () => {
      const [a, b] = [tourPayload(5811, { date: '2026-04-04', deliveries: 2 }), tourPayload(5812, { date: '2026-04-04', deliveries: 1 })];
      b.deliveries[0].positions[0].article = { ...a.deliveries[0].positions[0].article, name: 'Anders benannt' };
      b.deliveries.push(structuredClone(a.deliveries[1]));
      // A's tour again, under another name and with one more document.
      const aAgain = { ...tourPayload(5811, { date: '2026-04-04', deliveries: 1 }), name: 'Tour Süd' };
      msw.use(http.get(`${ERP}/tours`, () => HttpResponse.json({ tours: [a, b, aAgain] })));
      const first = await erpApi.post('/admin/import-erp?date=2026-04-04', undefined, { admin: true });
      expect(first.body).toMatchObject({ success: true, deliveries_created: 4, deliveries_moved: 0 });
      const changes = (await erpApi.db.select({ n: count() }).from(changeLog))[0].n;
      const again = await erpApi.post('/admin/import-erp?date=2026-04-04', undefined, { admin: true });
      expect(again.body).toMatchObject({ success: true, deliveries_moved: 0, deliveries_updated: 0, deliveries_unchanged: 4 });
      expect((await erpApi.db.select({ n: count() }).from(changeLog))[0].n).toBe(changes);
      const [shared] = await erpApi.db
        .select({ tourId: deliveries.tourId })
        .from(deliveries)
        .where(eq(deliveries.belegnummer, a.deliveries[1].belegnummer));
      expect((await erpApi.db.select().from(tours).where(eq(tours.id, shared.tourId)))[0].accountId).toBe(5811);
    });
  });

  describe('start-up catch-up', () => {
    // 23:30 in Berlin on 10 March: today is the 10th, the default target (offset 1) the 11th.
    const now = () => new Date('2026-03-10T22:30:00Z');
    const enabled = { ERP_IMPORT_ENABLED: 'true', ERP_IMPORT_OFFSET_DAYS: '1' };

    it('imports the target date and, in demo mode, today once; a restart imports nothing again', async () => {
      const first = await startTestServer(kind, enabled, { now });
      try {
        await first.running.importJobs!.catchUp;
        const runs = await first.db.select().from(erpImportRuns).orderBy(asc(erpImportRuns.targetDate));
        expect(runs.map((r) => [r.targetDate, r.trigger, r.success])).toEqual([
          ['2026-03-10', 'startup', true],
          ['2026-03-11', 'startup', true],
        ]);
        const token = await first.token(1001);
        expect((await first.get('/me/tours?date=2026-03-10', { token })).body.tours).toHaveLength(1);

        const second = await secondInstance(first, enabled, { now });
        try {
          await second.running.importJobs!.catchUp;
          expect(await second.db.select().from(erpImportRuns)).toHaveLength(2);
        } finally {
          await second.close();
        }
      } finally {
        await first.close();
      }
    });

    it('imports only the target date from a real ERP, logs each failure and tries again with backoff until it succeeds', async () => {
      const dates: string[] = [];
      msw.use(
        http.get(`${ERP}/tours`, ({ request }) => {
          dates.push(new URL(request.url).searchParams.get('date')!);
          return new HttpResponse(null, { status: 500 });
        }),
      );
      const retrying = { ERP_IMPORT_RETRY_FIRST_MS: '100', ERP_IMPORT_RETRY_MAX_MS: '300' };
      const server = await startTestServer(kind, { ...enabled, ...httpErp, ...retrying, ERP_IMPORT_OFFSET_DAYS: '2' }, { now });
      try {
        await expect.poll(() => dates.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
        expect(new Set(dates)).toEqual(new Set(['2026-03-12']));
        expect((await server.get('/health')).status).toBe(200);
        msw.use(http.get(`${ERP}/tours`, () => HttpResponse.json({ tours: [] })));
        await server.running.importJobs!.catchUp;
        const runs = (await runsOf(server, '2026-03-12')).map((r) => [r.trigger, r.success]);
        expect(runs[0]).toEqual(['startup', false]);
        expect(runs.slice(1, -1).every(([trigger, success]) => trigger === 'retry' && !success)).toBe(true);
        expect(runs.at(-1)).toEqual(['retry', true]);
      } finally {
        await server.close();
      }
    });

    it('does neither catch up nor schedule when ERP_IMPORT_ENABLED is off', async () => {
      const server = await startTestServer(kind, { ERP_IMPORT_ENABLED: 'false' }, { now });
      try {
        expect(server.running.importJobs).toBeUndefined();
        expect(await server.db.select().from(erpImportRuns)).toEqual([]);
      } finally {
        await server.close();
      }
    });
  });

  describe('scheduler', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('imports today plus the offset at the configured Berlin time, also across a clock change', async () => {
      // 04:50 in Berlin (summer time) on 24 October 2026; the clocks go back on the 25th.
      vi.useFakeTimers({ now: new Date('2026-10-24T02:50:00Z'), toFake: ['setTimeout', 'clearTimeout', 'Date'], shouldAdvanceTime: true });
      const ctx = {
        ...api.ctx,
        config: { ...api.ctx.config, erp: { ...api.ctx.config.erp, importCron: '0 5 * * *', importOffsetDays: 1 } },
      };
      const jobs = startImportJobs(ctx);
      try {
        expect(jobs.nextRun()).toEqual(new Date('2026-10-24T03:00:00Z'));
        await jobs.catchUp;
        expect((await runsOf(api, '2026-10-25')).map((r) => r.trigger)).toEqual(['startup']);

        // Just past the 05:00 run: advancing further in one go would also fire the database
        // client's query timeouts before the run's real I/O answers. `stop` waits for the run.
        await vi.advanceTimersByTimeAsync(10 * 60_000 + 1000);
        expect(jobs.nextRun()).toEqual(new Date('2026-10-25T04:00:00Z'));
      } finally {
        await jobs.stop();
      }
      const runs = await runsOf(api, '2026-10-25');
      expect(runs.map((r) => [r.trigger, r.success])).toEqual([
        ['startup', true],
        ['scheduler', true],
      ]);
      expect(runs[1].counters).toMatchObject({ deliveries_created: 0, deliveries_updated: 0 });
    });
  });

  describe('two instances', () => {
    it('runs one import of a date at a time: the other instance logs a skipped run', async () => {
      const gated = gatedErp();
      const first = await startTestServer(kind, {}, { erp: gated.erp });
      const second = await secondInstance(first);
      try {
        const running = runImport(first.ctx, '2026-05-20', 'manual');
        await gated.reading;
        const skipped = await runImport(second.ctx, '2026-05-20', 'scheduler');
        expect(skipped).toMatchObject({ success: false, skipped: true, tours: 0 });
        expect(skipped.error).toContain('already running');
        gated.open();
        expect(await running).toMatchObject({ success: true, skipped: false });
        expect((await runsOf(first, '2026-05-20')).map((r) => [r.trigger, r.success])).toEqual([
          ['manual', true],
          ['scheduler', false],
        ]);

        const afterwards = await runImport(second.ctx, '2026-05-20', 'manual');
        expect(afterwards).toMatchObject({ success: true, skipped: false, deliveries_created: 0 });
      } finally {
        await second.close();
        await first.close();
      }
    });
  });
});

describe('ERP import lock on PostgreSQL', () => {
  const api = useTestServer('postgres');

  it('respects the advisory lock held by another session', async () => {
    const client = new pg.Client({ connectionString: api.ctx.config.databaseUrl });
    await client.connect();
    try {
      await client.query('SELECT pg_advisory_lock($1, 20260521)', [IMPORT_LOCK]);
      expect(await runImport(api.ctx, '2026-05-21', 'manual')).toMatchObject({ skipped: true, success: false });
      await client.query('SELECT pg_advisory_unlock($1, 20260521)', [IMPORT_LOCK]);
      expect(await runImport(api.ctx, '2026-05-21', 'manual')).toMatchObject({ skipped: false, success: true });
    } finally {
      await client.end();
    }
  });
});
