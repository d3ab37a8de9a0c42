import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { berlinDate } from '../../shared/rules/calendar.js';
import type { SyncTourInput } from '../../shared/schemas/tours.js';
import { databaseKinds } from '../helpers/databases.js';
import { expectProblem } from '../helpers/problems.js';
import { startRecordingErp } from '../helpers/recordingErp.js';
import { startTestServer, type ApiResponse, type TestServer } from '../helpers/server.js';
import { copy, position, tourPayload } from '../helpers/tourPayloads.js';
import { completionForm } from '../helpers/uploads.js';
import { expectSnakeCase } from './admin.helpers.js';

let nextDriver = 72_000;

describe.each(databaseKinds)('an ERP that is down at start on %s', (kind) => {
  it('is tried again with backoff: the tours arrive once it is back, without a manual import, and the runs show it', async () => {
    const today = berlinDate(new Date());
    const driver = nextDriver++;
    const erp = await startRecordingErp({ tours: (date) => [tourPayload(driver, { date, deliveries: 2 })] });
    await erp.down();
    const api = await startTestServer(kind, {
      ERP_MODE: 'http',
      ERP_BASE_URL: erp.url,
      ERP_RETRIES: '0',
      ERP_TIMEOUT_MS: '1000',
      ERP_IMPORT_ENABLED: 'true',
      ERP_IMPORT_OFFSET_DAYS: '0',
      ERP_IMPORT_RETRY_FIRST_MS: '500',
      ERP_IMPORT_RETRY_MAX_MS: '2000',
    });
    try {
      // Down at start: the start-up import fails; the ERP is back 5 s after that.
      const runsOfToday = async () => (await api.get(`/admin/import-runs?date=${today}`, { admin: true })).body.runs as unknown[];
      await expect.poll(async () => (await runsOfToday()).length, { timeout: 20_000 }).toBeGreaterThan(0);
      const back = setTimeout(() => void erp.up(), 5000);
      const token = await api.token(driver);
      await expect
        .poll(async () => (await api.get(`/me/tours?date=${today}`, { token })).body.tours?.length, { timeout: 45_000, interval: 250 })
        .toBe(1);
      clearTimeout(back);
      // The run's record is finished after its tours are written: wait for that, not only for the tours.
      const newestFinishedAt = async () =>
        ((await api.get(`/admin/import-runs?date=${today}`, { admin: true })).body.runs as { finished_at: string | null }[])[0]
          ?.finished_at;
      await expect.poll(newestFinishedAt, { timeout: 10_000, interval: 100 }).toEqual(expect.any(String));
      const runs = await api.get(`/admin/import-runs?date=${today}`, { admin: true });
      expect(runs.status).toBe(200);
      expectSnakeCase(runs.body);
      const list = runs.body.runs as { trigger: string; success: boolean; error: string | null; deliveries_created: number }[];
      // Newest first: the good retry, the failed ones before it, the start-up run last.
      expect(list[0]).toMatchObject({ trigger: 'retry', success: true, error: null, deliveries_created: 2 });
      expect(list.at(-1)).toMatchObject({ trigger: 'startup', success: false, error: expect.stringMatching(/unreachable/) });
      expect(list.slice(1).every((r) => !r.success)).toBe(true);
    } finally {
      await api.close();
      await erp.close();
    }
  }, 60_000);
});

describe.each(databaseKinds)('import runs, withdrawals and ignored changes on %s', (kind) => {
  const date = '2026-05-04';
  let day: SyncTourInput[] = [];
  let erp: Awaited<ReturnType<typeof startRecordingErp>>;
  let api: TestServer;
  beforeAll(async () => {
    erp = await startRecordingErp({ tours: () => day });
    api = await startTestServer(kind, { ERP_MODE: 'http', ERP_BASE_URL: erp.url, ERP_RETRIES: '0' });
  });
  afterAll(async () => {
    await api.close();
    await erp.close();
  });
  const importDay = async () => {
    const response = await api.post(`/admin/import-erp?date=${date}`, undefined, { admin: true });
    expect(response.status).toBe(200);
    return response.body;
  };

  it('withdraws a delivery nobody worked on, keeps a worked one and a completed one, and reports them by number', async () => {
    const driver = nextDriver++;
    const tour = tourPayload(driver, { date, deliveries: 4 });
    for (const d of tour.deliveries) d.positions = [position(10, { quantity: 1 })];
    const [free, worked, done, unseen] = tour.deliveries;
    day = [{ ...tour, deliveries: [free, worked, done] }];
    expect(await importDay()).toMatchObject({ success: true, deliveries_created: 3 });

    const token = await api.token(driver);
    const tourId = (await api.get(`/me/tours?date=${date}`, { token })).body.tours[0].id;
    const details = async () => (await api.get(`/tours/${tourId}`, { token })).body;
    const byNumber = async (belegnummer: string) =>
      (await details()).deliveries.find((d: { belegnummer: string }) => d.belegnummer === belegnummer);
    const scan = async (belegnummer: string) => {
      const item = (await byNumber(belegnummer)).positions[0];
      const body = {
        scans: [{ clientScanId: randomUUID(), deliveryItemId: item.id, action: 'scan', occurredAt: new Date().toISOString() }],
      };
      expect((await api.post('/scans', body, { token })).body.results[0].status).toBe('applied');
    };
    await scan(worked.belegnummer);
    await scan(done.belegnummer);
    const doneId = (await byNumber(done.belegnummer)).id;
    expect((await api.post(`/deliveries/${doneId}/complete`, await completionForm(), { token })).status).toBe(200);
    const cursor = (await api.get('/sync/changes', { token })).body.cursor;

    const withdrawn = { reason: 'Auftrag vom Kunden storniert' };
    const changedDone = { ...copy(done), openAmountCents: done.openAmountCents + 500 };
    day = [{ ...tour, deliveries: [{ ...free, withdrawn }, { ...worked, withdrawn }, changedDone, { ...unseen, withdrawn }] }];
    const summary = await importDay();
    expect(summary).toMatchObject({
      success: true,
      deliveries_created: 0,
      deliveries_withdrawn: 1,
      withdrawals_refused: 1,
      withdrawals_refused_belegnummern: [worked.belegnummer],
      changes_ignored: 1,
      ignored_belegnummern: [done.belegnummer],
    });

    expect(await byNumber(free.belegnummer)).toMatchObject({ state: 'canceled', stateReason: withdrawn.reason });
    expect(await byNumber(worked.belegnummer)).toMatchObject({ state: 'active', stateReason: null });
    expect(await byNumber(done.belegnummer)).toMatchObject({ state: 'completed', erpOpenAmountCents: done.openAmountCents });
    expect(await byNumber(unseen.belegnummer)).toBeUndefined();
    const changes = (await api.get(`/sync/changes?since=${cursor}`, { token })).body.changes;
    expect(changes).toContainEqual(
      expect.objectContaining({
        entity: 'delivery',
        op: 'upsert',
        data: expect.objectContaining({ state: 'canceled', stateReason: withdrawn.reason }),
      }),
    );

    // The same day again: nothing left to withdraw, the worked one and the completed one still reported.
    expect(await importDay()).toMatchObject({ deliveries_withdrawn: 0, withdrawals_refused: 1, changes_ignored: 1 });
  });

  it('lists the failed and the good runs newest first, a page at a time, of one date or of all', async () => {
    await erp.down();
    const failed = await api.post(`/admin/import-erp?date=2026-05-05`, undefined, { admin: true });
    expectProblem(failed, 502, 'upstream_unavailable');
    await erp.up();
    erp.state.tours = () => [];
    const good = await api.post(`/admin/import-erp?date=2026-05-05`, undefined, { admin: true });
    expect(good.status).toBe(200);

    const runs = (await api.get('/admin/import-runs?date=2026-05-05', { admin: true })).body;
    expect(runs.count).toBe(2);
    expect(runs.runs).toMatchObject([
      { run_id: good.body.run_id, target_date: '2026-05-05', trigger: 'manual', success: true, error: null },
      {
        target_date: '2026-05-05',
        trigger: 'manual',
        success: false,
        skipped: false,
        error: expect.stringMatching(/unreachable/),
        tours: 0,
      },
    ]);
    expect(runs.runs[0].finished_at).not.toBeNull();

    const whole = (await api.get('/admin/import-runs', { admin: true })).body.runs;
    expect(whole.length).toBeGreaterThanOrEqual(5);
    const paged: unknown[] = [];
    let next: string | null = '/admin/import-runs?limit=2';
    while (next) {
      const page: ApiResponse = await api.get(next, { admin: true });
      expect(page.status).toBe(200);
      paged.push(...page.body.runs);
      next = page.headers.get('link')?.match(/^<([^>]+)>/)?.[1] ?? null;
    }
    expect(paged).toEqual(whole);
  });

  it.each(['?date=05-05-2026', '?date=2026-02-30', '?limit=0', '?limit=abc', '?cursor=nope'])('refuses %s with 400', async (query) => {
    expectProblem(await api.get(`/admin/import-runs${query}`, { admin: true }), 400, 'validation');
  });

  it('refuses a cursor made for another date', async () => {
    const first = await api.get('/admin/import-runs?date=2026-05-04&limit=1', { admin: true });
    const cursor = new URL(first.headers.get('link')!.match(/^<([^>]+)>/)![1], 'http://x').searchParams.get('cursor');
    expectProblem(await api.get(`/admin/import-runs?date=2026-05-05&cursor=${cursor}`, { admin: true }), 400, 'validation');
  });

  it('answers 401 without the admin key', async () => {
    expectProblem(await api.get('/admin/import-runs'), 401, 'unauthorized');
    expectProblem(await api.get('/admin/import-runs', { admin: 'wrong-key-0123456789abcdef' }), 401, 'unauthorized');
  });
});
