import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { and, eq, inArray } from 'drizzle-orm';
import type { Browser, Page } from 'puppeteer-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  articles,
  attachments,
  completions,
  deliveries,
  deliveryItems,
  notes,
  processedEvents,
  scanAudit,
} from '../../server/db/schema.js';
import { launchChromium } from '../helpers/chromium.js';
import { newTour } from '../helpers/factories.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { buildDriverWeb, layoutProblems, serveStatic } from './driverWebApp.js';

/**
 * The example driver web app (examples/driver-web), built with Vite, in the Chromium of
 * @sparticuz/chromium at a phone's viewport, against the real service: a driver signs in,
 * loads a tour, loses the network, scans, writes a note with a photo, holds one stop and
 * completes another with two drawn signatures, reloads the app offline (the service worker
 * serves it, IndexedDB keeps the outbox), and comes back online. The service must then hold
 * each of those actions exactly once. Last, a resume that meets the office's cancellation is
 * refused, and the status bar shows it with its reason. Screenshots of every step go to test-results/driver-web/.
 */
const shots = path.resolve(import.meta.dirname, '../../test-results/driver-web');
const PHONE = { width: 390, height: 844, isMobile: true, hasTouch: true, deviceScaleFactor: 1 };
const WAIT = { timeout: 30_000 };

let browser: Browser;
let work: string;
let app: Awaited<ReturnType<typeof serveStatic>> | undefined;
let server: TestServer;
const timings: Record<string, number> = {};

/** `YYYY-MM-DD` of today in this process's time zone, which the browser shares. */
function today() {
  const d = new Date();
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

beforeAll(async () => {
  let started = Date.now();
  work = await mkdtemp(path.join(os.tmpdir(), 'tourline-driver-web-'));
  await buildDriverWeb(path.join(work, 'dist'));
  timings.viteBuildMs = Date.now() - started;
  app = await serveStatic(path.join(work, 'dist'));
  server = await startTestServer('pglite', { CORS_ORIGINS: app.origin });
  await rm(shots, { recursive: true, force: true });
  await mkdir(shots, { recursive: true });
  started = Date.now();
  browser = await launchChromium(path.join(work, 'chromium'));
  timings.browserStartMs = Date.now() - started;
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await server?.close();
  if (work) await rm(work, { recursive: true, force: true });
  console.log(`driver web app: screenshots in ${shots}; timings ${JSON.stringify(timings)}`);
});

let step = 0;
async function shot(page: Page, name: string) {
  await page.screenshot({ path: path.join(shots, `${String(++step).padStart(2, '0')}-${name}.png`), fullPage: true });
}

const button = (page: Page, text: string) => page.waitForSelector(`xpath/.//button[normalize-space()='${text}']`, WAIT);
async function click(page: Page, text: string) {
  await (await button(page, text))!.click();
}
const statusIs = (page: Page, pending: number, online: boolean) =>
  page.waitForSelector(`.status-bar[data-pending="${pending}"][data-online="${online}"]`, WAIT);

/** A signature: a few strokes of a finger across the canvas. */
async function sign(page: Page, label: string) {
  const canvas = (await page.waitForSelector(`canvas[aria-label="${label}"]`, WAIT))!;
  await canvas.scrollIntoView();
  const box = (await canvas.boundingBox())!;
  for (const [from, to] of [
    [0.1, 0.6],
    [0.5, 0.9],
  ]) {
    await page.touchscreen.touchStart(box.x + box.width * from, box.y + box.height * 0.7);
    for (let i = 1; i <= 8; i++)
      await page.touchscreen.touchMove(box.x + box.width * (from + ((to - from) * i) / 8), box.y + box.height * (0.7 - 0.05 * i));
    await page.touchscreen.touchEnd();
  }
  await page.waitForSelector(`canvas[aria-label="${label}"][data-signed="true"]`, WAIT);
}

describe('the driver web app in real Chromium', { timeout: 120_000 }, () => {
  it('works a tour offline on a phone and the service ends with every action exactly once', async () => {
    const driver = 83_000 + Math.floor(Math.random() * 1000);
    const seeded = await newTour(server.db, {
      accountId: driver,
      tourDate: today(),
      deliveries: 2,
      openAmountCents: 5000,
      positions: [{ scannable: true, quantity: 2, scannedQuantity: 0, state: 'InProgress', articleName: 'Brot 1 kg' }],
    });
    const [first, second] = seeded.deliveries;
    const [article] = await server.db.select().from(articles).where(eq(articles.id, first.items[0].articleId));
    const photo = path.join(work, 'schaden.jpg');
    await writeFile(
      photo,
      await sharp({ create: { width: 320, height: 240, channels: 3, background: '#c33' } })
        .jpeg()
        .toBuffer(),
    );

    // The master data the stop needs: a cash payment method and two services.
    const office = await server.token(driver);
    for (const [where, body] of [
      ['/payment-methods', { code: `BAR-${driver}`, name: 'Barzahlung', collectOnSite: true }],
      ['/services', { key: `altglas-${driver}`, name: 'Altglas mitgenommen', kind: 'boolean' }],
      ['/services', { key: `paletten-${driver}`, name: 'Paletten zurück', kind: 'numeric', minValue: 0, maxValue: 10 }],
    ] as const)
      expect((await server.post(where, body, { token: office })).status).toBe(200);

    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    await page.setViewport(PHONE);
    const started = Date.now();
    try {
      // Sign in with a token and the service's address.
      await page.goto(app!.origin);
      await page.waitForSelector('textarea[name=token]', WAIT);
      await page.$eval('input[name=serviceUrl]', (input) => ((input as HTMLInputElement).value = ''));
      await page.type('input[name=serviceUrl]', server.url);
      await page.type('textarea[name=token]', await server.token(driver));
      await shot(page, 'sign-in');
      expect(await layoutProblems(page)).toEqual([]);
      await click(page, 'Anmelden');

      // "Tour wählen": today's tour, read from the service.
      const tour = (await page.waitForSelector(`xpath/.//button[starts-with(normalize-space(), 'Tour Nord')]`, WAIT))!;
      await shot(page, 'choose-tour');
      expect(await layoutProblems(page)).toEqual([]);
      await tour.click();
      // The service worker holds the shell before the network goes.
      await page.waitForFunction(() => navigator.serviceWorker.controller !== null, WAIT);
      await statusIs(page, 0, true);
      await shot(page, 'tour-loading');
      expect(await layoutProblems(page)).toEqual([]);
      timings.onlineUntilTourMs = Date.now() - started;

      // A dead zone: the driver loads by typing the article number twice.
      await page.setOfflineMode(true);
      await statusIs(page, 0, false);
      for (const n of [1, 2]) {
        await page.type('input[name=code]', article.articleNumber);
        await (await page.waitForSelector('.scanner button[type=submit]', WAIT))!.click();
        await statusIs(page, n, false);
      }
      await page.waitForSelector('xpath/.//p[contains(., "Geladen: 2 von 4")]', WAIT);
      await shot(page, 'loaded-offline');

      // The first stop: a note with a photo from the "camera", then both signatures and completion.
      await click(page, 'Zustellen');
      await (await page.waitForSelector('.item.next', WAIT))!.click();
      await page.waitForSelector('xpath/.//h2[.="Abschließen"]', WAIT);
      expect(await layoutProblems(page)).toEqual([]);
      // A money credit of 20 €: two steps of 10 €, with a reason.
      await (await page.waitForSelector('button[aria-label="10 € mehr"]', WAIT))!.click();
      await page.waitForSelector('xpath/.//output[contains(., "20,00")]', WAIT);
      await page.type('input[aria-label="Grund der Gutschrift"]', 'Bruch');
      await click(page, 'Gutschrift setzen');
      await statusIs(page, 3, false);
      await page.waitForSelector('xpath/.//p[contains(., "zu zahlen 30,00")]', WAIT);

      // The open 30 € taken in cash, and the service values: a yes/no and a number.
      await (await page.waitForSelector('xpath/.//section[@class="payment"]//button[contains(., "kassieren")]', WAIT))!.click();
      await statusIs(page, 4, false);
      await page.waitForSelector('xpath/.//p[contains(., "zuletzt 30,00")]', WAIT);
      await (await page.waitForSelector('xpath/.//label[contains(., "Altglas mitgenommen")]', WAIT))!.click();
      await statusIs(page, 5, false);
      await page.type('xpath/.//label[contains(., "Paletten zurück")]//input', '3');
      await page.keyboard.press('Tab');
      await statusIs(page, 6, false);

      await page.type('textarea[aria-label=Notiz]', 'Hintereingang benutzen');
      const file = (await page.$('input[type=file]'))!;
      await file.uploadFile(photo);
      await page.waitForSelector('xpath/.//label[contains(., "Foto: schaden.jpg")]', WAIT);
      await click(page, 'Notiz speichern');
      await statusIs(page, 7, false);
      await page.waitForSelector('xpath/.//li[contains(@class,"note") and contains(., "Hintereingang benutzen")]', WAIT);
      await shot(page, 'note-with-photo');

      await (await page.waitForSelector('xpath/.//label[contains(., "Ware vollständig übergeben")]', WAIT))!.click();
      await (await page.waitForSelector('xpath/.//label[contains(., "Notizen mit dem Kunden besprochen")]', WAIT))!.click();
      await sign(page, 'Unterschrift Kunde');
      await sign(page, 'Unterschrift Fahrer');
      await shot(page, 'signed');
      await click(page, 'Zustellung abschließen');
      await statusIs(page, 8, false);
      await page.waitForSelector('main.delivery[data-state=completed]', WAIT);
      await shot(page, 'completed-offline');

      // The second stop is held with a reason.
      await click(page, '‹ Tour');
      await (await page.waitForSelector('.item.next', WAIT))!.click();
      await click(page, 'Zurückstellen');
      await click(page, 'Tor zu');
      await (await page.waitForSelector('form.reason button[type=submit]', WAIT))!.click();
      await page.waitForSelector('main.delivery[data-state=held]', WAIT);
      await statusIs(page, 9, false);
      await shot(page, 'held-offline');

      // Nothing reached the service yet.
      const ids = [first.delivery.id, second.delivery.id];
      expect(await server.db.select().from(processedEvents).where(inArray(processedEvents.deliveryId, ids))).toEqual([]);
      expect(await server.db.select().from(scanAudit).where(inArray(scanAudit.deliveryId, ids))).toEqual([]);

      // The phone restarts the app still offline, and the app's own server is gone: the service worker serves the shell.
      await app!.close();
      app = undefined;
      await page.reload();
      await statusIs(page, 9, false);
      await page.waitForSelector('main.delivery[data-state=held]', WAIT);
      await shot(page, 'reloaded-offline');

      // The network returns: everything goes out, the status bar shows nothing pending.
      const back = Date.now();
      await page.setOfflineMode(false);
      await statusIs(page, 0, true);
      timings.syncAfterReconnectMs = Date.now() - back;
      expect(await page.$eval('.status-bar', (bar) => bar.getAttribute('data-refused'))).toBe('0');
      await shot(page, 'synced');
      timings.totalMs = Date.now() - started;

      // The service's state is what the driver did, each action once.
      const scans = await server.db.select().from(scanAudit).where(eq(scanAudit.deliveryItemId, first.items[0].id));
      expect(scans.map((s) => [s.action, s.scannedQuantityAfter]).sort()).toEqual([
        ['scan', 1],
        ['scan', 2],
      ]);
      const [item] = await server.db.select().from(deliveryItems).where(eq(deliveryItems.id, first.items[0].id));
      expect(item).toMatchObject({ scannedQuantity: 2, state: 'Done' });
      const written = await server.db.select().from(notes).where(eq(notes.deliveryId, first.delivery.id));
      expect(written).toHaveLength(1);
      expect(written[0].text).toBe('Hintereingang benutzen');
      // The delivery report the service renders itself after the completion is not the driver's.
      const files = (await server.db.select().from(attachments).where(eq(attachments.deliveryId, first.delivery.id))).filter(
        (f) => f.kind !== 'delivery_report',
      );
      expect(files.map((f) => f.kind).sort()).toEqual(['customer_signature', 'driver_signature', 'note_image']);
      expect(files.find((f) => f.kind === 'note_image')).toMatchObject({ noteId: written[0].id, contentType: 'image/jpeg' });
      for (const f of files) expect(f.sizeBytes).toBeGreaterThan(100);
      const done = await server.db.select().from(completions).where(eq(completions.deliveryId, first.delivery.id));
      expect(done).toHaveLength(1);
      expect(done[0].clientEventId).toBeTruthy();
      const states = await server.db
        .select({ id: deliveries.id, state: deliveries.state, reason: deliveries.stateReason, credit: deliveries.creditAmountCents })
        .from(deliveries)
        .where(inArray(deliveries.id, ids));
      expect(states.sort((a, b) => ids.indexOf(a.id) - ids.indexOf(b.id))).toEqual([
        { id: first.delivery.id, state: 'completed', reason: null, credit: 2000 },
        { id: second.delivery.id, state: 'held', reason: 'Tor zu', credit: null },
      ]);
      const processed = await server.db
        .select({ type: processedEvents.type, rejection: processedEvents.rejection })
        .from(processedEvents)
        .where(and(eq(processedEvents.accountId, driver), inArray(processedEvents.deliveryId, ids)));
      expect(processed.filter((p) => p.rejection)).toEqual([]);
      // A photo note is one upload with its text, a completion one multipart request: nine actions, nine events.
      expect(processed.map((p) => p.type).sort()).toEqual([
        'credit',
        'delivery.complete',
        'delivery.hold',
        'note.create',
        'payment',
        'scan',
        'scan',
        'service.set',
        'service.set',
      ]);
      const { body: read } = await server.get(`/tours/${seeded.tour.id}`, { token: office });
      const stop = read.deliveries.find((d: { id: string }) => d.id === first.delivery.id);
      expect(stop.latestPayment).toMatchObject({ amountCents: 3000, paymentMethodCode: `BAR-${driver}` });
      expect(
        stop.serviceValues.map((v: { boolValue: boolean | null; numericValue: number | null }) => [v.boolValue, v.numericValue]).sort(),
      ).toEqual([
        [null, 3],
        [true, null],
      ]);

      // A conflict: offline the driver resumes the held stop while the office cancels it. The
      // status bar shows the refusal with the service's reason until the driver drops it.
      await page.setOfflineMode(true);
      await statusIs(page, 0, false);
      await click(page, 'Fortsetzen');
      await statusIs(page, 1, false);
      const canceled = await server.post(
        `/deliveries/${second.delivery.id}/cancel`,
        { reason: 'Kunde hat storniert' },
        { token: await server.token(driver) },
      );
      expect(canceled.status).toBe(200);
      await page.setOfflineMode(false);
      await page.waitForSelector('.status-bar[data-pending="0"][data-refused="1"]', WAIT);
      const refusal = await page.$eval('.refused li', (li) => li.textContent ?? '');
      expect(refusal).toContain('Fortsetzen abgelehnt');
      expect(refusal).toMatch(/canceled|storniert|transition/i);
      await page.waitForSelector('main.delivery[data-state=canceled]', WAIT);
      await shot(page, 'refused');
      await click(page, 'Verwerfen');
      await page.waitForSelector('.status-bar[data-refused="0"]', WAIT);
      const resumes = await server.db
        .select({ rejection: processedEvents.rejection })
        .from(processedEvents)
        .where(and(eq(processedEvents.deliveryId, second.delivery.id), eq(processedEvents.type, 'delivery.resume')));
      expect(resumes).toHaveLength(1);
      expect(resumes[0].rejection).toMatchObject({ code: 'invalid_state_transition' });
    } catch (error) {
      await shot(page, 'failed').catch(() => undefined);
      throw error;
    }
  });
});
