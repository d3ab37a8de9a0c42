/**
 * A driver's day against a running Tourline service, through the client SDK:
 *   npm start                  # in another terminal
 *   npm run example:driver     # TOURLINE_URL (default http://localhost:3000), DRIVER (default 1001),
 *                              # ADMIN_API_KEY (default: the key in DATA_DIR, ./data)
 * It loads the driver's tour, loads one delivery completely and completes it with signatures,
 * holds another, then drives through a dead zone (the network fails for a while, and the app is
 * even restarted there), and comes back online. It prints what it did and the final state and
 * exits non-zero when the service's final state is not what the driver did.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import sharp from 'sharp';
import WebSocket from 'ws';
import {
  TourlineApi,
  TourlineClient,
  type DeliveryDetails,
  type FetchLike,
  type TourDetails,
  type WebSocketFactory,
} from '@tourline/client';
import { FileStore } from '@tourline/client/node';

const baseUrl = process.env.TOURLINE_URL ?? 'http://localhost:3000';
const driver = Number(process.env.DRIVER ?? 1001);
const log = (message: string) => console.log(`${new Date().toISOString().slice(11, 19)}  ${message}`);
const euro = (cents: number) => `${(cents / 100).toFixed(2)} EUR`;

// The development identity provider mints tokens only for the holder of the admin key.
const adminKey = process.env.ADMIN_API_KEY ?? readFileSync(path.join(process.env.DATA_DIR ?? './data', 'admin-api-key'), 'utf8').trim();

async function getToken(): Promise<string> {
  const response = await fetch(`${baseUrl}/dev/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-admin-api-key': adminKey },
    body: JSON.stringify({ personalnummer: driver }),
  });
  if (!response.ok)
    throw new Error(
      `POST /dev/token answered ${response.status}: is the service running with AUTH_MODE=dev, and does driver ${driver} exist? ${await response.text()}`,
    );
  return (await response.json()).accessToken;
}

/** The network of the phone: it can be switched off, as in a dead zone. */
let offline = false;
const sockets = new Set<WebSocket>();
const phoneFetch: FetchLike = (input, init) => (offline ? Promise.reject(new TypeError('fetch failed: no network')) : fetch(input, init));
const phoneWebSocket: WebSocketFactory = (url, protocols) => {
  const socket = new WebSocket(offline ? 'ws://127.0.0.1:1/' : url, protocols);
  socket.on('error', () => undefined);
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
  return socket;
};
function setOffline(value: boolean) {
  offline = value;
  if (value) for (const socket of sockets) socket.terminate();
}

const openPieces = (d: DeliveryDetails) => d.positions.filter((p) => p.scannable && p.state === 'InProgress');
const workable = (d: DeliveryDetails) => d.state === 'active' && !d.positions.some((p) => p.scannable && p.state === 'Held');

/** A tour of today or tomorrow with two deliveries to work on; otherwise a fresh one for a day of its own. */
async function findOrCreateTour(api: TourlineApi): Promise<string> {
  const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toLocaleDateString('en-CA', { timeZone: 'Europe/Berlin' });
  for (const date of [day(0), day(1)]) {
    for (const summary of (await api.tours({ date })).tours) {
      const tour = await api.tour(summary.id);
      const candidates = tour.deliveries.filter(workable);
      if (candidates.filter((d) => openPieces(d).length > 0).length >= 2) return summary.id;
    }
  }
  const date = `2031-${String(1 + Math.floor(Math.random() * 12)).padStart(2, '0')}-${String(1 + Math.floor(Math.random() * 28)).padStart(2, '0')}`;
  const address = { street: 'Torstraße', houseNumber: '1', postalCode: '10119', city: 'Berlin', country: 'DE' };
  const run = Date.now().toString(36);
  const delivery = (n: number) => ({
    belegartId: 1,
    belegnummer: `EX-${run}-${n}`,
    customer: { erpCustomerId: 900_000 + n, name: `Beispielkunde ${n}`, address },
    deliveryAddress: address,
    openAmountCents: n === 1 ? 0 : 4500,
    positions: [
      {
        lineNumber: 10,
        quantity: 3,
        unitPriceCents: 1500,
        article: { articleNumber: 'EX-WASSER', name: 'Mineralwasser 12 x 1 l', scannable: true },
      },
      {
        lineNumber: 20,
        quantity: 1,
        unitPriceCents: 500,
        article: { articleNumber: 'EX-FRACHT', name: 'Lieferpauschale', scannable: false },
      },
    ],
    contacts: [],
  });
  const { tour } = await api.syncTour({
    driver: { personalnummer: driver, name: `Fahrer ${driver}` },
    tourDate: date,
    name: 'Beispieltour',
    deliveries: [delivery(1), delivery(2)],
  });
  log(`no suitable tour today or tomorrow: created tour ${tour.id} for ${date} through POST /sync/tour`);
  return tour.id;
}

async function main() {
  const appDir = await mkdtemp(path.join(os.tmpdir(), 'tourline-driver-app-'));
  const options = {
    baseUrl,
    getToken: () => getToken(),
    fetch: phoneFetch,
    webSocket: phoneWebSocket,
    pollIntervalMs: 2000,
    backoff: { baseMs: 250, capMs: 4000 },
  };
  let client = await TourlineClient.open({ ...options, storage: await FileStore.open(appDir) });
  const report = (s = client.status()) =>
    `pending ${s.pendingCount} (oldest ${Math.round(s.oldestPendingAgeMs / 1000)} s), rejected ${s.rejected.length}, ${s.online ? 'online' : 'offline'}, live ${s.liveConnected ? 'on' : 'off'}${s.lastError ? `, last error: ${s.lastError.message}` : ''}`;

  try {
    log(`driver ${driver} at ${baseUrl}; the app keeps its outbox in ${appDir}`);
    const tourId = await findOrCreateTour(client.api);
    await client.loadTour(tourId);
    await client.loadMasterData();
    client.start();
    let tour = client.view(tourId)!;
    log(`tour ${tour.tour.tourDate} "${tour.tour.name ?? ''}": ${tour.deliveries.length} deliveries`);
    const [first, second] = tour.deliveries.filter(workable).filter((d) => openPieces(d).length > 0);

    // Delivery 1: load every piece, leave a note, take the money if something is open, complete.
    const expectedScans = new Map<string, number>();
    for (const line of openPieces(first)) {
      const missing = line.requiredQuantity - line.creditedQuantity - line.scannedQuantity;
      for (let i = 0; i < missing; i++) await client.scan(line.id);
      expectedScans.set(line.id, line.requiredQuantity - line.creditedQuantity);
    }
    log(`${first.belegnummer}: scanned ${[...expectedScans.values()].reduce((a, b) => a + b, 0)} pieces on ${expectedScans.size} lines`);
    await client.createNote(first.id, { text: 'Ware im Hinterhof abgestellt' });
    const open = client.delivery(first.id)!.openAmountCents;
    const method = Object.values(client.state.master.paymentMethods).find((m) => m.active);
    if (open > 0 && method) {
      await client.recordPayment(first.id, { paymentMethodId: method.id });
      log(`${first.belegnummer}: collected ${euro(open)} (${method.code})`);
    }
    const signature = new Uint8Array(
      await sharp({ create: { width: 300, height: 100, channels: 4, background: '#ffffff' } })
        .composite([
          {
            input: Buffer.from(
              '<svg width="300" height="100"><path d="M10 70 C 60 10, 90 90, 140 40 S 220 80, 290 30" stroke="#1a237e" stroke-width="4" fill="none"/></svg>',
            ),
          },
        ])
        .png()
        .toBuffer(),
    );
    const noteIds = client.delivery(first.id)!.notes.map((n) => n.id);
    await client.complete(first.id, {
      customerSignature: signature,
      driverSignature: signature,
      acknowledgements: {
        receiptConfirmed: true,
        notesAcknowledged: true,
        acknowledgedNoteIds: noteIds,
        paymentCollected: open > 0,
        internalNote: 'Beispielfahrt',
      },
    });
    log(`${first.belegnummer}: completed with both signatures (view: ${client.delivery(first.id)!.state})`);

    // Delivery 2: nobody home, so it is held, and taken up again from the dead zone.
    await client.holdDelivery(second.id, 'Kunde nicht angetroffen');
    await client.settled(30_000);
    log(`${second.belegnummer}: held; everything so far is on the server — ${report()}`);

    setOffline(true);
    log('--- entering a dead zone: the network is gone ---');
    const line = openPieces(second)[0];
    await client.resumeDelivery(second.id);
    await client.scan(line.id);
    await client.setCredit(second.id, { amountCents: 1000, reason: 'Kiste beschädigt' });
    log(`${second.belegnummer}: resumed, scanned 1 piece, credited 10.00 EUR — all offline`);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    log(`status in the dead zone: ${report()}`);
    log('the app is killed and started again, still without network');
    await client.close();
    client = await TourlineClient.open({ ...options, storage: await FileStore.open(appDir) });
    client.start();
    const after = client.delivery(second.id)!;
    log(
      `after the restart the outbox still holds ${client.status().pendingCount} actions; the view shows ${second.belegnummer} ${after.state}, credit ${euro(after.credit?.amountCents ?? 0)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    setOffline(false);
    log('--- back online ---');
    await client.settled(60_000);
    await client.sync();
    log(`synced — ${report()}`);

    // The service's truth must be what the driver did.
    tour = await client.api.tour(tourId);
    const server1 = tour.deliveries.find((d) => d.id === first.id)!;
    const server2 = tour.deliveries.find((d) => d.id === second.id)!;
    const problems: string[] = [];
    if (server1.state !== 'completed') problems.push(`${first.belegnummer} is ${server1.state}, not completed`);
    for (const [id, quantity] of expectedScans) {
      const p = server1.positions.find((x) => x.id === id)!;
      if (p.scannedQuantity !== quantity || p.state !== 'Done')
        problems.push(`line ${p.lineNumber} of ${first.belegnummer}: ${p.scannedQuantity}/${quantity} ${p.state}`);
    }
    if (!server1.notes.some((n) => n.text === 'Ware im Hinterhof abgestellt')) problems.push(`the note of ${first.belegnummer} is missing`);
    if (server2.state !== 'active') problems.push(`${second.belegnummer} is ${server2.state}, not active`);
    if (server2.credit?.amountCents !== 1000)
      problems.push(`${second.belegnummer} has credit ${JSON.stringify(server2.credit)}, not 10.00 EUR`);
    const line2 = server2.positions.find((p) => p.id === line.id)!;
    if (line2.scannedQuantity !== line.scannedQuantity + 1)
      problems.push(
        `line ${line2.lineNumber} of ${second.belegnummer}: ${line2.scannedQuantity} scanned, expected ${line.scannedQuantity + 1}`,
      );
    if (client.rejected().length)
      problems.push(
        `rejected: ${client
          .rejected()
          .map((r) => `${r.type} ${r.code} ${r.message}`)
          .join('; ')}`,
      );
    if (!isDeepStrictEqual(sortTour(client.view(tourId)!), sortTour(tour)))
      problems.push("the local view differs from the service's tour read");

    console.log('\nFinal state on the service:');
    for (const d of tour.deliveries) {
      const loaded = d.positions.filter((p) => p.scannable);
      console.log(
        `  ${d.belegnummer.padEnd(22)} ${d.state.padEnd(10)} lines done ${loaded.filter((p) => p.state === 'Done').length}/${loaded.length}` +
          `  open ${euro(d.openAmountCents)}${d.credit ? `  credit ${euro(d.credit.amountCents)}` : ''}${d.notes.length ? `  notes ${d.notes.length}` : ''}`,
      );
    }
    if (problems.length) {
      console.error(`\nThe final state is NOT what the driver did:\n  - ${problems.join('\n  - ')}`);
      process.exitCode = 1;
    } else {
      console.log('\nThe service holds exactly what the driver did; the local view equals the tour read.');
    }
  } finally {
    await client.close();
    await rm(appDir, { recursive: true, force: true });
  }
}

/** Array order of a tour read follows creation time; compare as sets. */
function sortTour(tour: TourDetails) {
  const byId = <T extends { id: string }>(list: T[]) => [...list].sort((a, b) => a.id.localeCompare(b.id));
  return {
    ...tour,
    customers: byId(tour.customers),
    articles: byId(tour.articles),
    warehouses: byId(tour.warehouses),
    deliveries: byId(tour.deliveries).map((d) => ({
      ...d,
      positions: byId(d.positions),
      notes: byId(d.notes),
      contacts: byId(d.contacts),
      attachments: byId(d.attachments),
      serviceValues: [...d.serviceValues].sort((a, b) => a.serviceId.localeCompare(b.serviceId)),
    })),
  };
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
