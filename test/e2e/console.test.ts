import { readFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { berlinDate } from '../../shared/rules/calendar.js';
import { completions } from '../../server/db/schema.js';
import { upstream } from '../../server/errors.js';
import { generateDemoTours } from '../../server/integrations/erp/demoData.js';
import { launchChromium } from '../helpers/chromium.js';
import { newTour } from '../helpers/factories.js';
import { startTestServer, TEST_ADMIN_KEY, type TestServer } from '../helpers/server.js';
import { completionForm } from '../helpers/uploads.js';
import { driverOf } from '../integration/admin.helpers.js';
import { layoutProblems } from './driverWebApp.js';

/**
 * The back-office console (/console) in the Chromium of @sparticuz/chromium against the real
 * service: a person of the office signs in through the development issuer (code flow with PKCE),
 * confirms the review of a delivery a driver changed and sees it come back after another change,
 * sends a failed ERP write-back again, and watches the day's tour move on a scan without a
 * reload. Every screen is checked with axe-core and for its layout at a desk's and a tablet's
 * size. Screenshots go to test-results/console/.
 */
const shots = path.resolve(import.meta.dirname, '../../test-results/console');
const DESK = { width: 1366, height: 768 };
// Size only: a change of isMobile or hasTouch reloads the page, and a reload signs out (the token lives in memory).
const TABLET = { width: 820, height: 1180 };
const WAIT = { timeout: 20_000 };
const screens = ['pruefungen', 'touren', 'zustellungen', 'erp', 'geraete'] as const;

let browser: Browser;
let work: string;
let server: TestServer;
let axeSource: string;
/** The ERP answers write-backs only while this is true. */
let erpUp = false;

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'tourline-console-'));
  axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  server = await startTestServer(
    'pglite',
    {},
    {
      erp: {
        fetchTours: async (date) => ({ tours: generateDemoTours(date), refused: [] }),
        async pushCompletion() {
          if (!erpUp) throw upstream('ERP nicht erreichbar');
        },
        async pushCancellation() {},
      },
    },
  );
  await rm(shots, { recursive: true, force: true });
  await mkdir(shots, { recursive: true });
  browser = await launchChromium(path.join(work, 'chromium'));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (work) await rm(work, { recursive: true, force: true });
  console.log(`console: screenshots in ${shots}`);
});

let step = 0;
const shot = (page: Page, name: string) =>
  page.screenshot({ path: path.join(shots, `${String(++step).padStart(2, '0')}-${name}.png`), fullPage: true });

/** Serious and critical axe-core findings on the page as it is. */
async function accessibilityProblems(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern (no inline script).
  await page.evaluate(axeSource);
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (context: Document) => Promise<{ violations: any[] }> } }).axe;
    const { violations } = await axe.run(document);
    return violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.nodes.map((n: { target: string[] }) => n.target.join(' ')).join(', ')}`);
  });
}

async function open(page: Page, screen: (typeof screens)[number], heading: string) {
  await page.evaluate((hash) => (location.hash = hash), `#${screen}`);
  await page.waitForFunction((text) => document.querySelector('main h1')?.textContent === text, WAIT, heading);
}

const headings: Record<(typeof screens)[number], string> = {
  pruefungen: 'Prüfungen',
  touren: 'Touren heute',
  zustellungen: 'Zustellungen',
  erp: 'ERP',
  geraete: 'Geräte',
};

async function check(page: Page, screen: (typeof screens)[number], size: string) {
  await open(page, screen, headings[screen]);
  await page.waitForFunction(() => !document.querySelector('main')?.textContent?.includes('Wird geladen'), WAIT);
  await new Promise((resolve) => setTimeout(resolve, 300));
  await shot(page, `${screen}-${size}`);
  expect(await layoutProblems(page), `${screen} at ${size}`).toEqual([]);
  expect(await accessibilityProblems(page), `${screen} at ${size}`).toEqual([]);
}

const button = (page: Page, text: string) => page.waitForSelector(`xpath/.//button[normalize-space()='${text}']`, WAIT);

describe('the back-office console in real Chromium', { timeout: 240_000 }, () => {
  it('signs in, confirms a changed delivery note, sends a failed write-back again and follows the day live', async () => {
    const personalnummer = 84_000 + Math.floor(Math.random() * 1000);
    const token = await server.token(personalnummer);
    const driver = driverOf(server, token);
    const {
      deliveries: [changed, delivered],
    } = await newTour(server.db, {
      accountId: personalnummer,
      tourDate: berlinDate(new Date()),
      deliveries: 2,
      positions: [
        { scannable: true, quantity: 2, unitPriceCents: 1250, articleName: 'Mineralwasser 12 x 1 l' },
        { scannable: true, quantity: 1, scannedQuantity: 0, state: 'InProgress', articleName: 'Brot 1 kg' },
      ],
    });

    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    const refusedByPolicy: string[] = [];
    page.on('console', (message) => {
      if (message.text().includes('Content Security Policy')) refusedByPolicy.push(message.text());
    });
    await page.setViewport(DESK);

    // Sign-in: the console sends the browser to the issuer, which sends it back with a code.
    await page.goto(`${server.url}/console/`);
    await page.waitForSelector('form input[name=name]', WAIT);
    await shot(page, 'sign-in');
    expect(page.url()).toContain('code_challenge_method=S256');
    await page.type('input[name=name]', 'Frau Weber');
    await page.type('input[name=key]', TEST_ADMIN_KEY);
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
    await page.waitForFunction(() => document.getElementById('user')?.textContent === 'Angemeldet: Frau Weber', WAIT);
    expect(new URL(page.url()).search).toBe('');
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }))).not.toContain('eyJ');

    // A driver removes a line and credits money: the review appears with those details.
    const car = await driver.car();
    await driver.scan(changed.items[0].id, 'remove', { authorCarId: car.id });
    await driver.credit(changed.delivery.id, { action: 'set', amountCents: 2000, reason: 'Verspätung', authorCarId: car.id });
    const card = `article[data-delivery-id="${changed.delivery.id}"]`;
    await page.waitForSelector(card, WAIT);
    // Intl writes a no-break space before the euro sign.
    const details = (await page.$eval(card, (element) => element.textContent ?? '')).replace(/\u00a0/g, ' ');
    for (const text of ['Position entfernt', 'Mineralwasser 12 x 1 l', 'Geldgutschrift gesetzt', '20,00 €', 'Verspätung', car.plate])
      expect(details).toContain(text);
    await shot(page, 'review');

    // Confirmed with one click: it leaves the queue, and its history names the person.
    await (await button(page, `Beleg ${changed.delivery.belegnummer} bestätigen`))!.click();
    await page.waitForSelector(card, { ...WAIT, hidden: true });
    await page.waitForFunction((text) => document.querySelector('.history')?.textContent?.includes(text), WAIT, 'Frau Weber');
    const history = await server.get(`/admin/reviews/${changed.delivery.id}/history`, { admin: true });
    expect(history.body.resolutions).toEqual([expect.objectContaining({ processor: 'Frau Weber', authenticated_by: 'back_office_token' })]);
    await shot(page, 'review-confirmed');

    // The driver changes the delivery again: it is back.
    await driver.credit(changed.delivery.id, { action: 'set', amountCents: 3000, reason: 'Verspätung', authorCarId: car.id });
    await page.waitForSelector(card, WAIT);
    await page.waitForFunction((selector) => document.querySelector(selector)?.textContent?.includes('30,00\u00a0€'), WAIT, card);

    // The day's tours move on a scan, without a reload.
    await open(page, 'touren', 'Touren heute');
    const progress = `[data-tour-id="${changed.delivery.tourId}"]`;
    await page.waitForSelector(progress, WAIT);
    const loadedBefore = Number(await page.$eval(progress, (element) => element.getAttribute('data-loaded')));
    const navigations: string[] = [];
    page.on('framenavigated', (frame) => navigations.push(frame.url()));
    await driver.scan(delivered.items[1].id, 'scan');
    await page.waitForSelector(`${progress}[data-loaded="${loadedBefore + 1}"]`, { timeout: 5000 });
    expect(navigations).toEqual([]);
    await shot(page, 'tours-moved');

    // A completion whose write-back failed is sent again from the ERP screen.
    const completed = await server.post(`/deliveries/${delivered.delivery.id}/complete`, await completionForm(), { token });
    expect(completed.status).toBe(200);
    await open(page, 'erp', 'ERP');
    const resend = await button(page, `Beleg ${delivered.delivery.belegnummer} erneut senden`);
    await shot(page, 'erp-failed');
    erpUp = true;
    await resend!.click();
    await page.waitForSelector(`xpath/.//button[normalize-space()='Beleg ${delivered.delivery.belegnummer} erneut senden']`, {
      ...WAIT,
      hidden: true,
    });
    const [pushed] = await server.db.select().from(completions).where(eq(completions.deliveryId, delivered.delivery.id));
    expect(pushed.erpPushStatus).toBe('succeeded');

    // The day's deliveries, with the signatures and the report.
    // The report is stored after the completion's answer; the screen shows it once it is there.
    await expect
      .poll(async () => (await server.get(`/admin/deliveries/${delivered.delivery.id}/report`, { admin: true })).status, WAIT)
      .toBe(200);
    await open(page, 'zustellungen', 'Zustellungen');
    await (await button(page, `Dokumente zu ${delivered.delivery.belegnummer}`))!.click();
    await page.waitForFunction(() => {
      const images = Array.from(document.querySelectorAll<HTMLImageElement>('.signatures img'));
      return images.length === 2 && images.every((image) => image.complete && image.naturalWidth > 0);
    }, WAIT);
    const report = await page.waitForSelector('a[download$=".pdf"]', WAIT);
    // The PDF the service answered, held by the page as an object URL (the policy lets the page fetch nothing but the API).
    expect(await report!.evaluate((link) => (link as HTMLAnchorElement).href)).toMatch(/^blob:/);
    await shot(page, 'deliveries-documents');

    for (const screen of screens) await check(page, screen, 'desk');
    await page.setViewport(TABLET);
    for (const screen of screens) await check(page, screen, 'tablet');

    await (await button(page, 'Abmelden'))!.click();
    await page.waitForFunction(() => document.querySelector('main')?.textContent?.includes('Abgemeldet.'), WAIT);
    expect(refusedByPolicy).toEqual([]);
    await context.close();
  });
});
