/**
 * The driver day the clients scenario sends through each client: its tour on the service, its
 * actions in the order a driver takes them, and the check on the service that each was applied
 * exactly once.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import sharp from 'sharp';
import type { RunningServer } from '../../server/server.js';
import { newTour } from '../helpers/factories.js';
import { signaturePng } from '../helpers/uploads.js';
import { requestJson } from './http.js';

export interface ClientsSizes {
  /** Actions in the day: scans, a note and a credit per delivery, one photo, a completion per delivery. */
  actions: number;
  deliveries: number;
  linesPerDelivery: number;
}
export const fullClientsSizes: ClientsSizes = { actions: 500, deliveries: 10, linesPerDelivery: 4 };
export const tinyClientsSizes: ClientsSizes = { actions: 24, deliveries: 2, linesPerDelivery: 2 };

/** One action of the day, as an app hands it to its write queue (the bytes of photos and signatures in `DayFiles`). */
export type DayAction =
  | { type: 'scan'; deliveryId: string; itemId: string }
  | { type: 'note'; deliveryId: string; text: string }
  | { type: 'credit'; deliveryId: string; amountCents: number; reason: string }
  | { type: 'photo'; deliveryId: string; text: string }
  | { type: 'complete'; deliveryId: string };

export interface DayFiles {
  photo: Uint8Array;
  customerSignature: Uint8Array;
  driverSignature: Uint8Array;
}

export interface Day {
  personalnummer: number;
  token: string;
  tourId: string;
  tourDate: string;
  actions: DayAction[];
  /** Scans each line takes: its required quantity. */
  scansPerLine: Map<string, number>;
  deliveryIds: string[];
}

/** A camera photo's size class: a JPEG of noise compresses little, as a photo of a parcel does. */
export async function dayFiles(): Promise<DayFiles> {
  const [width, height] = [1024, 768];
  const pixels = Buffer.alloc(width * height * 3);
  for (let i = 0; i < pixels.length; i++) pixels[i] = (i * 7919) % 251;
  const photo = await sharp(pixels, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 80 })
    .toBuffer();
  return {
    photo: new Uint8Array(photo),
    customerSignature: new Uint8Array(await signaturePng()),
    driverSignature: new Uint8Array(await signaturePng(400, 150, 'M20 80 L 380 90')),
  };
}

/** Seeds one driver's tour whose lines take exactly the day's scans, and answers the day. */
export async function seedDay(server: RunningServer, personalnummer: number, sizes: ClientsSizes): Promise<Day> {
  const { db } = server.ctx.database;
  const scans = sizes.actions - 3 * sizes.deliveries - 1;
  if (scans < sizes.deliveries * sizes.linesPerDelivery) throw new Error(`${sizes.actions} actions leave too few scans`);
  const tourDate = '2026-06-01';
  const actions: DayAction[] = [];
  const scansPerLine = new Map<string, number>();
  const deliveryIds: string[] = [];
  let tourId = '';
  for (let d = 0; d < sizes.deliveries; d++) {
    const ofDelivery = Math.floor(scans / sizes.deliveries) + (d < scans % sizes.deliveries ? 1 : 0);
    const quantities = Array.from(
      { length: sizes.linesPerDelivery },
      (_, l) => Math.floor(ofDelivery / sizes.linesPerDelivery) + (l < ofDelivery % sizes.linesPerDelivery ? 1 : 0),
    );
    // One delivery per call: each call adds its delivery to the same tour (account and date).
    const seeded = await db.transaction((tx) =>
      newTour(tx, {
        accountId: personalnummer,
        tourDate,
        openAmountCents: 0,
        positions: quantities.map((quantity) => ({ scannable: true, quantity, scannedQuantity: 0, state: 'InProgress' as const })),
      }),
    );
    tourId = seeded.tour.id;
    const { delivery, items } = seeded.deliveries[0];
    deliveryIds.push(delivery.id);
    for (const [l, item] of items.entries()) {
      scansPerLine.set(item.id, quantities[l]);
      for (let i = 0; i < quantities[l]; i++) actions.push({ type: 'scan', deliveryId: delivery.id, itemId: item.id });
    }
    actions.push({ type: 'note', deliveryId: delivery.id, text: `Hintereingang, Stopp ${d + 1}` });
    actions.push({ type: 'credit', deliveryId: delivery.id, amountCents: 1000, reason: 'Kiste beschädigt' });
    if (d === 0) actions.push({ type: 'photo', deliveryId: delivery.id, text: 'Schaden an der Kiste' });
    actions.push({ type: 'complete', deliveryId: delivery.id });
  }
  const { accessToken } = await requestJson<{ accessToken: string }>('POST', `${server.url}/dev/token`, {
    admin: server.adminKey,
    body: { personalnummer },
  });
  return { personalnummer, token: accessToken, tourId, tourDate, actions, scansPerLine, deliveryIds };
}

/** An id for an action or a note, as the peers' docs make them. */
export const newActionId = () => randomUUID();

/**
 * What the service holds of the day, each count against what the day sent: every action applied
 * once, none twice, none refused. Answers the problems found (none: exactly once).
 */
export async function checkExactlyOnce(server: RunningServer, day: Day): Promise<string[]> {
  const { db } = server.ctx.database;
  const account = day.personalnummer;
  const count = async (query: ReturnType<typeof sql>) => Number(((await db.execute(query)).rows[0] as { n: number | string }).n);
  const expected = {
    scans: [...day.scansPerLine.values()].reduce((a, b) => a + b, 0),
    notes: day.actions.filter((a) => a.type === 'note' || a.type === 'photo').length,
    credits: day.actions.filter((a) => a.type === 'credit').length,
    completions: day.actions.filter((a) => a.type === 'complete').length,
  };
  const found = {
    events: await count(sql`SELECT count(*) AS n FROM processed_events WHERE account_id = ${account} AND rejection IS NULL`),
    refused: await count(sql`SELECT count(*) AS n FROM processed_events WHERE account_id = ${account} AND rejection IS NOT NULL`),
    scans: await count(
      sql`SELECT count(*) AS n FROM scan_audit a JOIN delivery_items i ON i.id = a.delivery_item_id JOIN deliveries d ON d.id = i.delivery_id WHERE d.tour_id = ${day.tourId}`,
    ),
    scanned: await count(
      sql`SELECT coalesce(sum(i.scanned_quantity), 0) AS n FROM delivery_items i JOIN deliveries d ON d.id = i.delivery_id WHERE d.tour_id = ${day.tourId}`,
    ),
    notes: await count(sql`SELECT count(*) AS n FROM notes n JOIN deliveries d ON d.id = n.delivery_id WHERE d.tour_id = ${day.tourId}`),
    credits: await count(
      sql`SELECT count(*) AS n FROM credit_events c JOIN deliveries d ON d.id = c.delivery_id WHERE d.tour_id = ${day.tourId}`,
    ),
    completions: await count(
      sql`SELECT count(*) AS n FROM completions c JOIN deliveries d ON d.id = c.delivery_id WHERE d.tour_id = ${day.tourId}`,
    ),
    completed: await count(sql`SELECT count(*) AS n FROM deliveries WHERE tour_id = ${day.tourId} AND state = 'completed'`),
  };
  const problems: string[] = [];
  const want = (what: string, got: number, wanted: number) => {
    if (got !== wanted) problems.push(`${what}: ${got}, expected ${wanted}`);
  };
  want('events recorded', found.events, day.actions.length);
  want('events refused', found.refused, 0);
  want('scan audit entries', found.scans, expected.scans);
  want('pieces scanned', found.scanned, expected.scans);
  want('notes', found.notes, expected.notes);
  want('credit events', found.credits, expected.credits);
  want('completions', found.completions, expected.completions);
  want('completed deliveries', found.completed, expected.completions);
  return problems;
}
