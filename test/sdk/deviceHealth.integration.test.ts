import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import type { FetchLike } from '../../client-sdk/api.js';
import { MemoryStore, type TourlineClient } from '../../client-sdk/index.js';
import { SDK_VERSION } from '../../client-sdk/version.js';
import { berlinDate } from '../../shared/rules/calendar.js';
import { databaseKinds } from '../helpers/databases.js';
import { sample } from '../helpers/prometheus.js';
import { useTestServer } from '../helpers/server.js';
import { FaultInjector } from './faults.js';
import { openClient, sdkOptions } from './service.js';

const png = new Uint8Array(
  await sharp({ create: { width: 40, height: 20, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 1 } } })
    .png()
    .toBuffer(),
);
const admin = { admin: true } as const;
const DEMO_DRIVER = 1001;

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${JSON.stringify(value).slice(0, 800)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Scans every line of a delivery to its quantity, then completes it with both signatures. */
async function completeStop(client: TourlineClient, tourId: string, deliveryId: string) {
  const delivery = client.view(tourId)!.deliveries.find((d) => d.id === deliveryId)!;
  for (const line of delivery.positions.filter((p) => p.scannable))
    for (let i = line.scannedQuantity; i < line.requiredQuantity; i++) await client.scan(line.id);
  await client.complete(deliveryId, {
    customerSignature: png,
    driverSignature: png,
    acknowledgements: { receiptConfirmed: true, paymentCollected: true },
  });
}

describe.each(databaseKinds)('a phone holding completions, seen by the office, on %s', (kind) => {
  const api = useTestServer(kind, { METRICS_PORT: '0' });

  it('lists the device with its two completions, marks both deliveries and counts them, and all clears within 5 s once uploads pass', async () => {
    const today = berlinDate(new Date());
    expect((await api.post(`/admin/import-erp?date=${today}`, undefined, admin)).status).toBe(200);
    const token = await api.issueToken(DEMO_DRIVER);
    const faults = new FaultInjector(api.url);
    // A weak link: the completions' multipart uploads never get through, small requests do.
    let uploadsFail = true;
    const weakFetch: FetchLike = (input, init) =>
      uploadsFail && init.body instanceof FormData
        ? Promise.reject(new TypeError('fetch failed: upload stalled'))
        : faults.fetch(input, init);
    const storage = new MemoryStore();
    const options = sdkOptions(() => api, DEMO_DRIVER, faults, {
      fetch: weakFetch,
      webSocket: faults.webSocket,
      storage,
      app: { name: 'Fahrer-App', version: '3.2.1' },
    });
    let client = await openClient(options);
    const [summary] = await client.loadTours({ date: today });
    const tourId = summary.id;
    const [a, b] = client.view(tourId)!.deliveries;
    client.start();
    await completeStop(client, tourId, a.id);
    // The next stop comes later, as a driver's does: its completion is news of its own, behind the first one still pending.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await completeStop(client, tourId, b.id);

    const holding = async () => (await api.get('/admin/devices?pending_older_than_minutes=0&holds_completions=true', admin)).body.devices;
    const [device] = await eventually(holding, (list) => list.length === 1 && list[0].pending_completion_count === 2, 10_000);
    expect(device).toMatchObject({
      account_id: DEMO_DRIVER,
      sdk_version: SDK_VERSION,
      app_name: 'Fahrer-App',
      app_version: '3.2.1',
      platform: 'node',
      pending_count: 2,
      oldest_pending: { type: 'delivery.complete', delivery_id: a.id },
    });
    expect(device.attachment_bytes).toBe(4 * png.byteLength);
    expect(device.last_push_at).not.toBeNull();
    expect(device.pending_completions.map((c: { belegnummer: string }) => c.belegnummer).sort()).toEqual(
      [a.belegnummer, b.belegnummer].sort(),
    );
    const marks = async () =>
      (await api.get(`/tours/${tourId}`, { token })).body.deliveries.filter((d: any) => d.pendingOnDevice).map((d: any) => d.id);
    expect((await marks()).sort()).toEqual([a.id, b.id].sort());
    const held = async () => sample(await (await fetch(api.running.metricsUrl!)).text(), 'tourline_device_pending_completions');
    expect(await held()).toBe(2);

    // The app is closed with the work pending: the office keeps seeing its last report, and the phone keeps its id.
    await client.close();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await holding()).map((d: { device_id: string }) => d.device_id)).toEqual([device.device_id]);
    client = await openClient(options);
    expect(client.outbox.pending()).toHaveLength(2);

    uploadsFail = false;
    const started = Date.now();
    client.start();
    await eventually(holding, (list) => list.length === 0, 5000);
    await eventually(marks, (list) => list.length === 0, 5000 - (Date.now() - started));
    await eventually(held, (n) => n === 0, 5000 - (Date.now() - started));
    expect(Date.now() - started).toBeLessThan(5000);
    const [after] = (await api.get(`/admin/devices?account=${DEMO_DRIVER}`, admin)).body.devices;
    expect(after).toMatchObject({ device_id: device.device_id, pending_count: 0, pending_completion_count: 0 });
  }, 60_000);
});
