import { afterAll, beforeAll, expect, it } from 'vitest';
import { TourlineClient } from '@tourline/client';
import { demoTour, startTestServer, type TestTourline } from '@tourline/test-server';

const DAY = '2026-12-07';
const DRIVER = 4711;
let tourline: TestTourline;

beforeAll(async () => {
  const tour = demoTour({ date: DAY, driver: { personalnummer: DRIVER }, deliveries: 3 });
  tourline = await startTestServer({ tours: [tour], now: `${DAY}T07:00:00+01:00` });
}, 60_000); // the first start in a process migrates its database image

afterAll(() => tourline?.close());

/** Sends until the outbox is empty: a failed send (a lost answer) is tried again, as the app would. */
async function syncUntilSent(client: TourlineClient) {
  for (let attempt = 0; attempt < 10 && client.status().pendingCount > 0; attempt++) await client.sync().catch(() => undefined);
}

it('works a delivery offline and the service applies every scan exactly once', async () => {
  const getToken = () => tourline.tokenFor(DRIVER);
  const client = await TourlineClient.open({ baseUrl: tourline.url, getToken, webSocket: null, backoff: { baseMs: 20, capMs: 100 } });
  const [summary] = await client.loadTours();
  const delivery = client.view(summary.id)!.deliveries[0];
  const lines = delivery.positions.filter((line) => line.scannable);

  tourline.network.cut(); // the van drives into a dead zone
  const scans = [];
  for (const line of lines) scans.push(await client.scan(line.id));
  await expect(client.sync()).rejects.toThrow();
  expect(client.status().pendingCount).toBe(lines.length);

  tourline.network.restore();
  tourline.network.loseAnswers(1, { path: '/sync/push' }); // applied by the service, never heard by the phone
  await syncUntilSent(client);
  await tourline.waitForSettled(scans.map((scan) => scan.eventId));

  const { deliveries } = await tourline.admin.beleg(delivery.belegnummer);
  expect(deliveries[0].positions.filter((p) => p.scannable).map((p) => p.scanned_quantity)).toEqual(lines.map(() => 1));
  expect(tourline.network.stats.lost).toBe(1);
  await client.close();
});
