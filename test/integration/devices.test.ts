import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { pruneDevices } from '../../server/engine/deviceReports.js';
import { databaseKinds } from '../helpers/databases.js';
import { newTour, scanEvent } from '../helpers/factories.js';
import { sample } from '../helpers/prometheus.js';
import { useTestServer } from '../helpers/server.js';
import { SyncSocket } from '../helpers/wsClient.js';
import { expectSnakeCase } from './admin.helpers.js';

const admin = { admin: true } as const;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A report of a device with nothing waiting; `pending` adds completions of these deliveries. */
function report(deviceId: string, pending: string[] = [], extra: Record<string, unknown> = {}) {
  const at = new Date(Date.now() - 60_000).toISOString();
  return {
    deviceId,
    sdkVersion: '1.4.0',
    appName: 'Fahrer-App',
    appVersion: '3.2.1',
    platform: 'react-native',
    pendingCount: pending.length,
    oldestPending: pending.length ? { ageMs: 60_000, type: 'delivery.complete', deliveryId: pending[0] } : null,
    pendingCompletionCount: pending.length,
    pendingCompletions: pending.map((deliveryId) => ({ deliveryId, completedAt: at })),
    rejectedCount: 0,
    outboxBytes: 1200 * pending.length,
    attachmentBytes: 40_000 * pending.length,
    lastPushAt: null,
    lastPullAt: new Date().toISOString(),
    lastErrorCode: pending.length ? 'network' : null,
    ...extra,
  };
}

describe.each(databaseKinds)('device sync health on %s', (kind) => {
  const api = useTestServer(kind, { METRICS_PORT: '0', DEVICES_PER_ACCOUNT: '3' });
  const devicesOf = async (query: string) => {
    const response = await api.get(`/admin/devices?${query}`, admin);
    expect(response.status, response.text).toBe(200);
    return response.body.devices as any[];
  };
  const scrape = async () => (await fetch(api.running.metricsUrl!)).text();
  const tourRead = async (token: string, tourId: string) => (await api.get(`/tours/${tourId}`, { token })).body;

  it('shows a device holding two completions in the list, on both deliveries and in the metrics, and clears all once it reports an empty outbox', async () => {
    const token = await api.token(6301);
    const tour = await newTour(api.db, { accountId: 6301, deliveries: 3 });
    const [a, b] = tour.deliveries.map((d) => d.delivery);
    const deviceId = randomUUID();
    const stored = await api.post('/sync/device', report(deviceId, [a.id, b.id]), { token });
    expect(stored.status, stored.text).toBe(204);

    const listed = await devicesOf('account=6301&pending_older_than_minutes=0&holds_completions=true');
    expect(listed).toHaveLength(1);
    expectSnakeCase(listed[0]);
    expect(listed[0]).toMatchObject({
      device_id: deviceId,
      account_id: 6301,
      pending_count: 2,
      pending_completion_count: 2,
      oldest_pending: { type: 'delivery.complete', delivery_id: a.id },
      app_name: 'Fahrer-App',
      last_error_code: 'network',
    });
    expect(listed[0].pending_completions.map((c: any) => c.belegnummer).sort()).toEqual([a.belegnummer, b.belegnummer].sort());

    const read = await tourRead(token, tour.tour.id);
    const marked = read.deliveries.filter((d: any) => d.pendingOnDevice);
    expect(marked.map((d: any) => d.id).sort()).toEqual([a.id, b.id].sort());
    expect(marked[0].pendingOnDevice).toMatchObject({ deviceId });
    const beleg = (await api.get(`/admin/belege/${a.belegnummer}`, admin)).body;
    expect(beleg.deliveries[0].pending_on_device).toMatchObject({ device_id: deviceId });
    const metrics = await scrape();
    expect(sample(metrics, 'tourline_device_pending_completions')).toBe(2);
    expect(sample(metrics, 'tourline_devices', { sdk_version: '1.4.0' })).toBeGreaterThanOrEqual(1);
    expect(sample(metrics, 'tourline_device_oldest_pending_age_seconds')).toBeGreaterThanOrEqual(59);

    await sleep(1100);
    expect((await api.post('/sync/device', report(deviceId), { token })).status).toBe(204);
    expect(await devicesOf('account=6301&holds_completions=true')).toEqual([]);
    expect((await devicesOf('account=6301'))[0]).toMatchObject({ device_id: deviceId, pending_count: 0, oldest_pending: null });
    expect((await tourRead(token, tour.tour.id)).deliveries.some((d: any) => d.pendingOnDevice)).toBe(false);
    expect((await api.get(`/admin/belege/${a.belegnummer}`, admin)).body.deliveries[0].pending_on_device).toBeNull();
    expect(sample(await scrape(), 'tourline_device_pending_completions')).toBe(0);
  });

  it('takes the report along with a push and over the socket, and a bad one refuses nothing else', async () => {
    const token = await api.token(6302);
    const tour = await newTour(api.db, {
      accountId: 6302,
      positions: [{ scannable: true, quantity: 3, scannedQuantity: 0, state: 'InProgress' }],
    });
    const item = tour.deliveries[0].items[0];
    const deviceId = randomUUID();
    const push = (device: unknown) =>
      api.post(
        '/sync/push',
        { clientId: 'c', device, events: [{ ...scanEvent(item.id), eventId: randomUUID(), occurredAt: new Date().toISOString() }] },
        { token },
      );
    const kept = await push(report(deviceId, [], { pendingCount: 1 }));
    expect(kept.status).toBe(200);
    expect(kept.body.device).toEqual({ status: 'stored' });
    expect(kept.body.results[0].status).toBe('applied');

    const bad = await push({ ...report(deviceId), pendingCount: 'many' });
    expect(bad.status).toBe(200);
    expect(bad.body.results[0].status).toBe('applied');
    expect(bad.body.device).toMatchObject({ status: 'refused', code: 'validation' });
    const huge = await push(report(randomUUID(), [], { appName: 'x'.repeat(90), lastErrorCode: 'y'.repeat(9000) }));
    expect(huge.body).toMatchObject({ results: [{ status: 'applied' }], device: { status: 'refused', code: 'payload_too_large' } });
    const plain = await api.post(
      '/sync/push',
      { clientId: 'c', events: [{ ...scanEvent(item.id), eventId: randomUUID(), occurredAt: new Date().toISOString() }] },
      { token },
    );
    expect(plain.status).toBe(200);
    expect(plain.body.device).toBeUndefined();
    expect((await devicesOf('account=6302'))[0]).toMatchObject({ device_id: deviceId, pending_count: 1 });

    const socket = await SyncSocket.open(api.url, { token });
    try {
      await sleep(1100);
      socket.send({ type: 'device', report: report(deviceId) });
      expect(await socket.next((m) => m.type === 'device')).toEqual({ type: 'device', status: 'stored' });
      const seen = socket.messages.length;
      socket.send({ type: 'device', report: { deviceId } });
      expect(await socket.next((m) => m.type === 'device', seen)).toMatchObject({ type: 'device', status: 'refused', code: 'validation' });
    } finally {
      socket.close();
    }
    expect((await devicesOf('account=6302'))[0]).toMatchObject({ pending_count: 0 });
  });

  it.each([
    ['a wrong type', { pendingCount: -1 }, 400],
    [
      'more completions named than counted',
      { pendingCompletions: [{ deliveryId: randomUUID(), completedAt: new Date().toISOString() }] },
      400,
    ],
    ['no device id', { deviceId: 'phone-1' }, 400],
    ['an oversized report', { appVersion: 'v'.repeat(20), lastErrorCode: 'e'.repeat(10_000) }, 413],
  ])('refuses %s with a problem and stores nothing', async (_what, change, status) => {
    const token = await api.token(6303);
    const deviceId = randomUUID();
    const response = await api.post('/sync/device', { ...report(deviceId), ...change }, { token });
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toMatch(/problem\+json/);
    expect(await devicesOf('account=6303')).toEqual([]);
  });

  it("refuses another account's device id (409) and leaves that device as it was", async () => {
    const deviceId = randomUUID();
    const tour = await newTour(api.db, { accountId: 6304 });
    await api.post('/sync/device', report(deviceId, [tour.deliveries[0].delivery.id]), { token: await api.token(6304) });
    const other = await api.post('/sync/device', report(deviceId), { token: await api.token(6305) });
    expect(other.status).toBe(409);
    expect(await devicesOf('account=6305')).toEqual([]);
    expect((await devicesOf('account=6304'))[0]).toMatchObject({ device_id: deviceId, pending_completion_count: 1 });
  });

  it('caps a flood: one write per device a second (429 with Retry-After), and at most DEVICES_PER_ACCOUNT devices, those holding work kept', async () => {
    const token = await api.token(6306);
    const tour = await newTour(api.db, { accountId: 6306 });
    const holding = randomUUID();
    expect((await api.post('/sync/device', report(holding, [tour.deliveries[0].delivery.id]), { token })).status).toBe(204);
    const again = await api.post('/sync/device', report(holding), { token });
    expect(again.status).toBe(429);
    expect(again.headers.get('retry-after')).toBe('1');
    for (let i = 0; i < 6; i++) expect((await api.post('/sync/device', report(randomUUID()), { token })).status).toBe(204);
    const kept = await devicesOf('account=6306');
    expect(kept).toHaveLength(3);
    expect(kept.find((d) => d.device_id === holding)).toMatchObject({ pending_completion_count: 1 });
  });

  it('filters by staleness, refusals and versions, and pages by account and device id', async () => {
    const token = await api.token(6307);
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    await api.post('/sync/device', report(ids[0], [], { rejectedCount: 2, sdkVersion: '0.9.0' }), { token });
    await api.post('/sync/device', report(ids[1], [], { appVersion: '4.0.0' }), { token });
    await api.post('/sync/device', report(ids[2]), { token });
    await api.db.execute(sql`UPDATE devices SET last_seen_at = now() - interval '2 hours' WHERE device_id = ${ids[2]}`);
    const only = async (query: string) => (await devicesOf(`account=6307&${query}`)).map((d) => d.device_id);
    expect(await only('has_refusals=true')).toEqual([ids[0]]);
    expect((await only('has_refusals=false')).sort()).toEqual([ids[1], ids[2]].sort());
    expect(await only('sdk_version=0.9.0')).toEqual([ids[0]]);
    expect(await only('app_version=4.0.0')).toEqual([ids[1]]);
    expect(await only('stale_for_more_than_minutes=60')).toEqual([ids[2]]);

    const first = await api.get('/admin/devices?account=6307&limit=2', admin);
    expect(first.body.count).toBe(2);
    const next = /^<([^>]+)>; rel="next"$/.exec(first.headers.get('link') ?? '')![1];
    const second = await api.get(next, admin);
    expect(second.headers.get('link')).toBeNull();
    expect([...first.body.devices, ...second.body.devices].map((d: any) => d.device_id)).toEqual([...ids].sort());
    const foreign = await api.get(`/admin/devices?account=6306&cursor=${new URL(next, 'http://x').searchParams.get('cursor')}`, admin);
    expect(foreign.status).toBe(400);
  });

  it.each(['holds_completions=maybe', 'pending_older_than_minutes=-1', 'account=abc', 'limit=0'])(
    'refuses the query %s with 400',
    async (query) => {
      expect((await api.get(`/admin/devices?${query}`, admin)).status).toBe(400);
    },
  );

  it('needs the admin key for the list and a token for the report', async () => {
    expect((await api.get('/admin/devices')).status).toBe(401);
    expect((await api.post('/sync/device', report(randomUUID()))).status).toBe(401);
  });

  it('keeps the last report of a device unseen for a while, and drops it after the retention', async () => {
    const token = await api.token(6308);
    const deviceId = randomUUID();
    await api.post('/sync/device', report(deviceId), { token });
    await api.db.execute(sql`UPDATE devices SET last_seen_at = now() - interval '10 days' WHERE device_id = ${deviceId}`);
    expect(await pruneDevices(api.db, new Date(Date.now() - 30 * 24 * 3600 * 1000))).toBe(0);
    expect(await devicesOf('account=6308')).toHaveLength(1);
    expect(await pruneDevices(api.db, new Date(Date.now() - 5 * 24 * 3600 * 1000))).toBeGreaterThanOrEqual(1);
    expect(await devicesOf('account=6308')).toEqual([]);
  });
});
