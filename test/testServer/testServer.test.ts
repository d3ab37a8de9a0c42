import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { ProblemError } from '../../client-sdk/problem.js';
import { demoTour, startTestServer, type TestTourline } from '../../test-server/index.js';
import { completionForm } from '../helpers/uploads.js';

const DAY = '2026-12-07';
const DRIVER = 4711;

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
async function toursOf(tourline: TestTourline, driver: number, query = '') {
  const answer = await fetch(`${tourline.url}/me/tours${query}`, { headers: bearer(await tourline.tokenFor(driver)) });
  expect(answer.status).toBe(200);
  return ((await answer.json()) as { tours: { id: string; tourDate: string }[] }).tours;
}
/** A scan of the first scannable line of the tour's first delivery, pushed as the SDK does. */
async function pushScan(tourline: TestTourline, tourId: string, eventId = randomUUID()) {
  const token = await tourline.tokenFor(DRIVER);
  const tour = await (await fetch(`${tourline.serviceUrl}/tours/${tourId}`, { headers: bearer(token) })).json();
  const line = tour.deliveries[0].positions.find((p: { scannable: boolean }) => p.scannable);
  const event = { eventId, type: 'scan', action: 'scan', deliveryItemId: line.id, occurredAt: new Date().toISOString() };
  const push = () =>
    fetch(`${tourline.url}/sync/push`, {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: 'test-device', events: [event] }),
    });
  return { eventId, push, line };
}

describe('a test server', () => {
  let tourline: TestTourline;
  let tourId: string;
  beforeAll(async () => {
    tourline = await startTestServer({
      now: `${DAY}T07:00:00+01:00`,
      tours: [demoTour({ date: DAY, driver: { personalnummer: DRIVER }, deliveries: 2 })],
    });
    [{ id: tourId }] = await toursOf(tourline, DRIVER);
  }, 120_000);
  afterAll(() => tourline?.close());

  it("lists the seeded tour as today's by its clock, and follows the clock to another day", async () => {
    expect(await toursOf(tourline, DRIVER)).toMatchObject([{ tourDate: DAY }]);
    tourline.clock.advance(24 * 3600_000);
    expect(await toursOf(tourline, DRIVER)).toEqual([]);
    tourline.clock.set(`${DAY}T12:00:00+01:00`);
    expect(await toursOf(tourline, DRIVER)).toHaveLength(1);
  });

  it('seeds idempotently and refuses a tour that is not in the /sync/tour shape with the problem', async () => {
    const again = await tourline.seedTour(demoTour({ date: DAY, driver: { personalnummer: DRIVER }, deliveries: 2 }));
    expect(again).toMatchObject({ created: false, tour: { id: tourId }, deliveries: { created: 0 } });
    const refused = await tourline.seedTour({ ...demoTour({ date: DAY }), tourDate: '07.12.2026' }).catch((error) => error);
    expect(refused).toBeInstanceOf(ProblemError);
    expect(refused).toMatchObject({ status: 400 });
  });

  it('applies a push whose answer was lost once, and takes its repeat as a duplicate', async () => {
    const scan = await pushScan(tourline, tourId);
    tourline.network.loseAnswers(1, { path: '/sync/push' });
    await expect(scan.push()).rejects.toThrow();
    expect(await tourline.waitForSettled([scan.eventId])).toEqual([{ eventId: scan.eventId, applied: true, rejection: null }]);
    const repeat = await scan.push();
    expect(repeat.status).toBe(200);
    expect((await repeat.json()).results).toMatchObject([{ eventId: scan.eventId, status: 'duplicate' }]);
    const { deliveries } = await tourline.admin.beleg(
      demoTour({ date: DAY, driver: { personalnummer: DRIVER } }).deliveries[0].belegnummer,
    );
    expect(deliveries[0].positions.find((p) => p.id === scan.line.id)!.scanned_quantity).toBe(1);
    expect(tourline.network.stats.lost).toBe(1);
  });

  it('cuts HTTP and WebSocket until restored, slows answers, and fails only uploads', async () => {
    const token = await tourline.tokenFor(DRIVER);
    const socket = new WebSocket(`${tourline.url.replace('http', 'ws')}/sync/ws`, ['bearer', token]);
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    tourline.network.cut();
    await closed;
    await expect(fetch(`${tourline.url}/livez`)).rejects.toThrow();
    tourline.network.restore();
    expect((await fetch(`${tourline.url}/livez`)).status).toBe(200);

    tourline.network.slow(300);
    const started = performance.now();
    expect((await fetch(`${tourline.url}/livez`)).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(600);
    tourline.network.restore();

    tourline.network.failUploads();
    const delivery = (await (await fetch(`${tourline.url}/tours/${tourId}`, { headers: bearer(token) })).json()).deliveries[1];
    const upload = () =>
      fetch(`${tourline.url}/deliveries/${delivery.id}/notes/image`, { method: 'POST', headers: bearer(token), body: new FormData() });
    await expect(upload()).rejects.toThrow();
    expect((await fetch(`${tourline.url}/me/tours`, { headers: bearer(token) })).status).toBe(200);
    tourline.network.restore();
    expect((await upload()).status).toBe(400);
  });

  it('lets the ERP write-back fail and hang, and writes the completion back once when it works again', async () => {
    const token = await tourline.tokenFor(DRIVER);
    const delivery = (await (await fetch(`${tourline.url}/tours/${tourId}`, { headers: bearer(token) })).json()).deliveries[1];
    // One event per piece, as a driver scans them.
    const scans = delivery.positions
      .filter((p: { scannable: boolean }) => p.scannable)
      .flatMap((p: { id: string; requiredQuantity: number }) =>
        Array.from({ length: p.requiredQuantity }, () => ({
          eventId: randomUUID(),
          type: 'scan',
          action: 'scan',
          deliveryItemId: p.id,
          occurredAt: new Date().toISOString(),
        })),
      );
    const pushed = await fetch(`${tourline.url}/sync/push`, {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: 'test-device', events: scans }),
    });
    expect((await pushed.json()).results.map((r: { status: string }) => r.status)).toEqual(scans.map(() => 'applied'));
    tourline.erp.hangWriteBack();
    const completed = await fetch(`${tourline.url}/deliveries/${delivery.id}/complete`, {
      method: 'POST',
      headers: bearer(token),
      body: await completionForm(),
    });
    expect(completed.status).toBe(200);
    expect(tourline.erp.writeBacks).toEqual([]);
    // The hung call timed out; the retry meets an ERP that refuses once more, the next one goes through.
    tourline.erp.restore();
    tourline.erp.failWriteBack(1);
    await vi.waitFor(() => expect(tourline.erp.writeBacks).toHaveLength(1), { timeout: 10_000, interval: 50 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(tourline.erp.writeBacks).toHaveLength(1);
    expect(tourline.erp.writeBacks[0]).toMatchObject({
      document: { belegnummer: delivery.belegnummer },
      idempotencyKey: `completion-${delivery.id}`,
    });
  });
});

describe('test servers side by side', () => {
  it('start in one process, each on its own database', async () => {
    const [a, b] = await Promise.all([startTestServer(), startTestServer()]);
    try {
      await a.seedTour(demoTour({ date: DAY, driver: { personalnummer: DRIVER } }));
      expect(await toursOf(a, DRIVER, `?date=${DAY}`)).toHaveLength(1);
      expect(await toursOf(b, DRIVER, `?date=${DAY}`)).toEqual([]);
      expect(a.url).not.toBe(b.url);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 120_000);
});
