import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inArray } from 'drizzle-orm';
import { build } from 'esbuild';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deliveries, notes, processedEvents, scanAudit } from '../../server/db/schema.js';
import { launchChromium } from '../helpers/chromium.js';
import { databaseKinds, type DatabaseKind } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { useTestServer, type TestServer } from '../helpers/server.js';

/**
 * The SDK in a real Chromium (the binary inside the @sparticuz/chromium package) against the
 * real service. The page and the service share one origin: a small proxy serves the bundled
 * app and forwards everything else to the service, and can lose the service's answers after
 * it committed (`lose`).
 */
class Origin {
  lose = false;
  readonly server: http.Server;
  constructor(
    private readonly bundle: string,
    private readonly target: () => string,
  ) {
    this.server = http.createServer((req, res) => {
      if (req.url === '/')
        return void res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><script src="/app.js"></script>');
      if (req.url === '/app.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(this.bundle);
      const lose = this.lose;
      const upstream = http.request(
        `${this.target()}${req.url}`,
        { method: req.method, headers: { ...req.headers, host: new URL(this.target()).host } },
        (answer) => {
          if (lose) {
            // The service committed; the driver's phone never hears of it.
            answer.resume();
            answer.on('end', () => res.socket?.destroy());
            return;
          }
          res.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.socket?.destroy());
      req.pipe(upstream);
    });
  }
  async listen() {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }
  close() {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(resolve));
  }
}

let browser: Browser;
let userData: string;
let bundle: string;
beforeAll(async () => {
  const built = await build({
    entryPoints: [path.join(import.meta.dirname, 'browser/app.ts')],
    bundle: true,
    write: false,
    format: 'iife',
    target: 'es2022',
    logLevel: 'silent',
  });
  bundle = built.outputFiles[0].text;
  userData = await mkdtemp(path.join(os.tmpdir(), 'tourline-chromium-'));
  browser = await launchChromium(userData);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  if (userData) await rm(userData, { recursive: true, force: true });
});

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

type App = Record<string, (...args: any[]) => Promise<any>>;
const call = <T = any>(page: Page, name: string, ...args: unknown[]) =>
  page.evaluate((n, a) => (globalThis as unknown as { app: App }).app[n](...a), name, args) as Promise<T>;

describe('storage adapters in real Chromium', () => {
  it('IndexedDB passes the adapter contract', async () => {
    const origin = new Origin(bundle, () => 'http://127.0.0.1:9');
    const context = await browser.createBrowserContext();
    cleanups.push(
      () => origin.close(),
      () => context.close(),
    );
    const page = await context.newPage();
    await page.goto(await origin.listen());
    expect(await call(page, 'contract')).toEqual([]);
  });
});

describe.each(databaseKinds)('the SDK in real Chromium against the service on %s', { timeout: 60_000 }, (kind: DatabaseKind) => {
  const server: TestServer = useTestServer(kind);
  let pnr = 81_000 + Math.floor(Math.random() * 1000) * 10;

  /** A driver with a tour of two deliveries; the first has a line of 10 pieces to scan. Each test its own browser context (its own IndexedDB). */
  async function setUp() {
    const driver = pnr++;
    const seeded = await newTour(server.db, {
      accountId: driver,
      deliveries: 2,
      positions: [{ scannable: true, quantity: 10, scannedQuantity: 0, state: 'InProgress' }],
    });
    const origin = new Origin(bundle, () => server.url);
    const url = await origin.listen();
    const context = await browser.createBrowserContext();
    cleanups.push(
      () => origin.close(),
      () => context.close(),
    );
    const pushes = new Map<Page, number>();
    const openPage = async () => {
      const page = await context.newPage();
      await page.exposeFunction('tourlineToken', () => server.token(driver));
      page.on('request', (r) => {
        if (r.url().endsWith('/sync/push')) pushes.set(page, (pushes.get(page) ?? 0) + 1);
      });
      await page.goto(url);
      return page;
    };
    const [first, second] = seeded.deliveries;
    return { seeded, origin, openPage, pushes, first: first.delivery.id, second: second.delivery.id, item: first.items[0].id };
  }

  const processed = async (ids: string[]) =>
    (await server.db.select().from(processedEvents).where(inArray(processedEvents.eventId, ids))).length;

  it('keeps actions in IndexedDB through a network cut, lost answers and a reload, and delivers each exactly once when the network returns', async () => {
    const { seeded, origin, openPage, first, second, item } = await setUp();
    const page = await openPage();
    await call(page, 'open');
    await call(page, 'loadTours', seeded.tour.tourDate);
    await call(page, 'start');

    await page.setOfflineMode(true);
    const events = [
      await call<string>(page, 'scan', item),
      await call<string>(page, 'scan', item),
      await call<string>(page, 'scan', item),
      await call<string>(page, 'hold', second, 'Tor zu'),
    ];
    await call<string>(page, 'photo', first, 'Hintereingang');
    expect(await call(page, 'status')).toMatchObject({ pendingCount: 5, online: false });
    expect((await call(page, 'view', first)).positions[0].scannedQuantity).toBe(3);
    expect(await call(page, 'stored')).toMatchObject({ databases: ['tourline', 'tourline-attachments'], attachments: 1 });
    expect(await processed(events)).toBe(0);

    // The network returns, but every answer of the service is lost on the way back.
    origin.lose = true;
    await page.setOfflineMode(false);
    await expect.poll(() => processed(events), { timeout: 10_000 }).toBe(4);
    expect(await call(page, 'status')).toMatchObject({ pendingCount: 5 });

    // The driver reloads the app: the outbox comes back from IndexedDB, sends again, still loses the answers.
    await page.reload();
    expect(await call(page, 'open')).toMatchObject({ pendingCount: 5 });
    expect((await call(page, 'view', first)).positions[0].scannedQuantity).toBe(3);
    expect((await call(page, 'stored')).outboxKeys).toHaveLength(5);
    await call(page, 'start');
    await expect.poll(async () => (await call(page, 'status')).lastError?.code, { timeout: 10_000 }).toBe('network');

    // A dead zone ends: the browser's `online` event sends at once, long before the 30 s backoff.
    origin.lose = false;
    await page.setOfflineMode(true);
    await page.setOfflineMode(false);
    expect(await call(page, 'settled', 10_000)).toMatchObject({ pendingCount: 0, rejected: [], online: true });

    expect(await processed(events)).toBe(4);
    expect(
      await server.db
        .select()
        .from(scanAudit)
        .where(inArray(scanAudit.clientScanId, events.slice(0, 3))),
    ).toHaveLength(3);
    const [held] = await server.db
      .select()
      .from(deliveries)
      .where(inArray(deliveries.id, [second]));
    expect(held.state).toBe('held');
    const photos = await server.db
      .select()
      .from(notes)
      .where(inArray(notes.deliveryId, [first]));
    expect(photos).toMatchObject([{ text: 'Hintereingang', imageAttachment: expect.any(String) }]);
    // The sent photo stays stored for the window of acknowledged actions (a restore may need it again).
    expect(await call(page, 'stored')).toMatchObject({ outboxKeys: [], attachments: 1 });
    expect((await call(page, 'view', first)).positions[0].scannedQuantity).toBe(3);
  });

  it("reports the device's health from the browser: a device id kept in IndexedDB, the web platform, its pending work, then the emptied outbox", async () => {
    const { seeded, openPage, first, item } = await setUp();
    const account = seeded.tour.accountId;
    const page = await openPage();
    await call(page, 'open');
    await call(page, 'loadTours', seeded.tour.tourDate);
    await page.setOfflineMode(true);
    await call(page, 'start');
    await call<string>(page, 'scan', item);
    await call<string>(page, 'photo', first, 'Hof');
    const deviceId = await call<string>(page, 'deviceId');
    expect(deviceId).toMatch(/^[0-9a-f-]{36}$/);

    // Back in coverage: the first report names the work that waited; then the outbox empties and says so.
    await page.setOfflineMode(false);
    const device = async () => (await server.get(`/admin/devices?account=${account}`, { admin: true })).body.devices[0];
    await expect.poll(device, { timeout: 10_000 }).toMatchObject({ device_id: deviceId, platform: 'web', app_name: 'Fahrer-Web' });
    await call(page, 'settled', 10_000);
    await expect.poll(async () => (await device()).pending_count, { timeout: 10_000 }).toBe(0);

    await page.reload();
    await call(page, 'open');
    expect(await call(page, 'deviceId')).toBe(deviceId);
  });

  it('two tabs of one app: one sends, the other hands over its actions; when the sending tab closes, the other sends what is left, each action once', async () => {
    const { seeded, openPage, pushes, item } = await setUp();
    const a = await openPage();
    await call(a, 'open');
    await call(a, 'loadTours', seeded.tour.tourDate);
    await call(a, 'start');
    const b = await openPage();
    await call(b, 'open');
    await call(b, 'start');

    // Tab A leads and sends tab B's action; B's handle settles without B sending anything.
    const handedOver = await call<string>(b, 'scan', item);
    await expect.poll(async () => (await call(b, 'outcomes'))[handedOver], { timeout: 10_000 }).toBe('applied');
    expect(pushes.get(a)).toBeGreaterThan(0);
    expect(pushes.get(b) ?? 0).toBe(0);
    // An applied action stays stored until its change reaches the copy (settled): wait for that.
    await expect.poll(async () => (await call(b, 'stored')).outboxKeys, { timeout: 10_000 }).toEqual([]);

    // The leader loses the network; both tabs queue at the same moment.
    await a.setOfflineMode(true);
    const queued = await Promise.all([...Array(4)].flatMap(() => [call<string>(a, 'scan', item), call<string>(b, 'scan', item)]));
    await expect.poll(async () => (await call(a, 'status')).pendingCount, { timeout: 10_000 }).toBe(8);
    expect((await call(b, 'stored')).outboxKeys).toHaveLength(8);
    expect(await processed(queued)).toBe(0);
    expect(pushes.get(b) ?? 0).toBe(0);

    // Tab A closes with all eight unsent: B takes the lead and sends A's actions and its own.
    await a.close();
    expect(await call(b, 'settled', 15_000)).toMatchObject({ pendingCount: 0, rejected: [] });
    expect(pushes.get(b)).toBeGreaterThan(0);
    expect(await processed([handedOver, ...queued])).toBe(9);
    expect(
      await server.db
        .select()
        .from(scanAudit)
        .where(inArray(scanAudit.clientScanId, [handedOver, ...queued])),
    ).toHaveLength(9);
    const outcomes = await call<Record<string, string>>(b, 'outcomes');
    expect(queued.filter((id) => id in outcomes).map((id) => outcomes[id])).toEqual(['applied', 'applied', 'applied', 'applied']);
    expect((await call(b, 'stored')).outboxKeys).toEqual([]);
  });
});
