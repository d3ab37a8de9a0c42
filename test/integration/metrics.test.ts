import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { sample } from '../helpers/prometheus.js';
import { useTestServer } from '../helpers/server.js';
import { SyncSocket } from '../helpers/wsClient.js';

const families = [
  'tourline_http_request_duration_seconds',
  'tourline_events_total',
  'tourline_engine_write_wait_seconds',
  'tourline_engine_write_seconds',
  'tourline_websocket_clients',
  'tourline_db_pool_connections_in_use',
  'tourline_db_pool_waiting',
  'tourline_change_log_lag',
  'tourline_erp_writeback_backlog',
  'tourline_erp_import_runs',
  'nodejs_eventloop_lag_seconds',
  'process_cpu_user_seconds_total',
  'process_resident_memory_bytes',
];

describe.each(databaseKinds)('Prometheus metrics on METRICS_PORT on %s', (kind) => {
  const api = useTestServer(kind, { METRICS_PORT: '0' });
  const scrape = async () => {
    const response = await fetch(api.running.metricsUrl!);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return response.text();
  };

  it('shows every family with its help and type', async () => {
    const text = await scrape();
    for (const family of families) expect(text, family).toMatch(new RegExp(`^# TYPE ${family} `, 'm'));
    expect(sample(text, 'tourline_erp_writeback_backlog', { status: 'pending' })).toBe(0);
    expect(sample(text, 'tourline_erp_writeback_backlog', { status: 'failed' })).toBe(0);
    expect(sample(text, 'tourline_db_pool_waiting')).toBe(0);
  });

  it('counts pushed events by type, result and refusal code', async () => {
    const token = await api.token(8101);
    const tour = await newTour(api.db, {
      accountId: 8101,
      positions: [{ scannable: true, quantity: 1, scannedQuantity: 0, state: 'InProgress' }],
    });
    const line = tour.deliveries[0].items[0];
    const scan = () => ({
      eventId: randomUUID(),
      occurredAt: new Date().toISOString(),
      type: 'scan',
      deliveryItemId: line.id,
      action: 'scan',
    });
    const before = await scrape();
    const applied = (text: string) => sample(text, 'tourline_events_total', { type: 'scan', result: 'applied' }) ?? 0;
    const refused = (text: string) =>
      sample(text, 'tourline_events_total', { type: 'scan', result: 'refused', code: 'quantity_exceeded' }) ?? 0;
    const first = scan();
    const push = await api.post('/sync/push', { clientId: 'phone', events: [first, scan(), { ...first }] }, { token });
    expect(push.body.results.map((r: { status: string }) => r.status)).toEqual(['applied', 'rejected', 'duplicate']);
    const after = await scrape();
    expect(applied(after) - applied(before)).toBe(1);
    expect(refused(after) - refused(before)).toBe(1);
    expect(sample(after, 'tourline_events_total', { type: 'scan', result: 'duplicate' })).toBeGreaterThanOrEqual(1);
  });

  it("times each request's wait for the engine's writer and the run that wrote it, from push and REST alike", async () => {
    const token = await api.token(8106);
    const tour = await newTour(api.db, {
      accountId: 8106,
      positions: [{ scannable: true, quantity: 10, scannedQuantity: 0, state: 'InProgress' }],
    });
    const deliveryItemId = tour.deliveries[0].items[0].id;
    const scan = () => ({ eventId: randomUUID(), occurredAt: new Date().toISOString(), type: 'scan', deliveryItemId, action: 'scan' });
    const counts = (text: string) =>
      ['tourline_engine_write_wait_seconds_count', 'tourline_engine_write_seconds_count'].map((name) => sample(text, name) ?? 0);
    const before = counts(await scrape());
    const pushes = await Promise.all(
      Array.from({ length: 3 }, () => api.post('/sync/push', { clientId: 'phone', events: [scan()] }, { token })),
    );
    expect(pushes.map((p) => p.status)).toEqual([200, 200, 200]);
    const rest = await api.post(
      '/scans',
      { scans: [{ clientScanId: randomUUID(), deliveryItemId, action: 'scan', occurredAt: new Date().toISOString() }] },
      { token },
    );
    expect(rest.status).toBe(200);
    const text = await scrape();
    expect(counts(text).map((n, i) => n - before[i])).toEqual([4, 4]);
    expect(sample(text, 'tourline_engine_write_seconds_sum')).toBeGreaterThan(0);
    // A push refused before the engine (no events) is not timed as a write.
    expect((await api.post('/sync/push', {}, { token })).status).toBe(400);
    expect(counts(await scrape())).toEqual(counts(text));
  });

  it('times requests by route template, never by the raw path', async () => {
    const token = await api.token(8102);
    const tour = await newTour(api.db, { accountId: 8102 });
    const count = (text: string) =>
      sample(text, 'tourline_http_request_duration_seconds_count', { method: 'GET', route: '/tours/:tour_id', status: '200' }) ?? 0;
    const before = count(await scrape());
    expect((await api.get(`/tours/${tour.tour.id}`, { token })).status).toBe(200);
    expect((await api.get(`/tours/${randomUUID()}/nothing-here`, { token })).status).toBe(404);
    const text = await scrape();
    expect(count(text) - before).toBe(1);
    expect(text).not.toContain(tour.tour.id);
    expect(sample(text, 'tourline_http_request_duration_seconds_count', { route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
  });

  it('times a route without parameters under its path, with or without a query; another spelling is 404', async () => {
    const token = await api.token(8105);
    const count = (text: string) =>
      sample(text, 'tourline_http_request_duration_seconds_count', { method: 'GET', route: '/me/tours', status: '200' }) ?? 0;
    const before = count(await scrape());
    for (const path of ['/me/tours', '/me/tours?x=1']) {
      expect((await api.get(path, { token })).body, path).toEqual({ tours: [] });
    }
    for (const path of ['/me/tours/', '/ME/Tours']) {
      expect((await api.get(path, { token })).status, path).toBe(404);
    }
    expect(count(await scrape()) - before).toBe(2);
  });

  it('shows open WebSockets and how far the slowest resumed one is behind the change-log head', async () => {
    const watcher = await api.token(8103);
    const other = await api.token(8104);
    const tour = await newTour(api.db, {
      accountId: 8104,
      positions: [{ scannable: true, quantity: 3, scannedQuantity: 0, state: 'InProgress' }],
    });
    const clients = sample(await scrape(), 'tourline_websocket_clients')!;
    const socket = await SyncSocket.open(api.url, { token: watcher });
    try {
      const { body } = await api.get('/sync/cursor', { token: watcher });
      socket.send({ type: 'resume', cursor: body.cursor });
      await socket.next((m) => m.type === 'changes');
      let text = await scrape();
      expect(sample(text, 'tourline_websocket_clients')).toBe(clients + 1);
      expect(sample(text, 'tourline_change_log_lag')).toBe(0);
      // Changes of another account: the watcher is sent nothing, so it stays behind the head.
      const scan = () => ({
        eventId: randomUUID(),
        occurredAt: new Date().toISOString(),
        type: 'scan',
        deliveryItemId: tour.deliveries[0].items[0].id,
        action: 'scan',
      });
      for (const push of [scan(), scan()]) await api.post('/sync/push', { clientId: 'phone', events: [push] }, { token: other });
      text = await scrape();
      expect(sample(text, 'tourline_change_log_lag')).toBeGreaterThanOrEqual(2);
    } finally {
      socket.ws.close();
      await socket.closed;
    }
    await expect.poll(async () => sample(await scrape(), 'tourline_websocket_clients')).toBe(clients);
  });

  it('counts logged ERP import runs by result', async () => {
    const succeeded = (text: string) => sample(text, 'tourline_erp_import_runs', { result: 'succeeded' }) ?? 0;
    const before = succeeded(await scrape());
    expect((await api.post('/admin/import-erp?date=2026-05-04', undefined, { admin: true })).status).toBe(200);
    expect(succeeded(await scrape()) - before).toBe(1);
  });

  if (kind === 'postgres') {
    it('shows the pool in use while a transaction holds a connection', async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const holder = api.db.transaction(async (tx) => {
        await tx.execute('SELECT 1');
        await held;
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      try {
        expect(sample(await scrape(), 'tourline_db_pool_connections_in_use')).toBeGreaterThanOrEqual(1);
      } finally {
        release();
        await holder;
      }
    });
  }

  it.each([
    ['POST', '/metrics'],
    ['DELETE', '/metrics'],
    ['GET', '/'],
    ['GET', '/metrics/x'],
    ['GET', '/readyz'],
  ])('answers %s %s on the metrics port with a 404 problem', async (method, path) => {
    const response = await fetch(new URL(path, api.running.metricsUrl), { method });
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await response.json()).toMatchObject({ code: 'not_found' });
  });

  it('sends the scrape with nosniff, like every answer of the service', async () => {
    const response = await fetch(api.running.metricsUrl!);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('does not serve /metrics on the public port', async () => {
    const response = await api.get('/metrics');
    expect(response.status).toBe(404);
    expect(response.body).toMatchObject({ code: 'not_found' });
  });
});
