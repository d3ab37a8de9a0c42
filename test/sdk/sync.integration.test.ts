import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inArray } from 'drizzle-orm';
import sharp from 'sharp';
import { describe, expect, it, vi } from 'vitest';
import { TourlineClient } from '../../client-sdk/index.js';
import { FileStore } from '../../client-sdk/node.js';
import type { Db } from '../../server/db/client.js';
import { completions, creditEvents, deliveries, paymentProtocol, processedEvents, scanAudit } from '../../server/db/schema.js';
import type { TourDetails } from '../../shared/schemas/deliveries.js';
import { databaseKinds, type DatabaseKind } from '../helpers/databases.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import WebSocket from 'ws';
import type { WebSocketLike } from '../../client-sdk/live.js';
import { FaultyNetwork } from '../../test-server/network.js';
import { waitForSettled } from '../../test-server/settle.js';
import { FaultInjector, on } from './faults.js';
import { cleanups, driverWithTour, expectViewEqualsServer, openClient, sdkOptions, syncUntilSettled } from './service.js';
import { inProcess } from '../helpers/target.js';

const signature = await sharp({ create: { width: 40, height: 20, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 1 } } })
  .png()
  .toBuffer();
const png = new Uint8Array(signature);

const countWhere = async (db: Db, table: typeof processedEvents | typeof scanAudit, ids: string[]) => {
  const column = table === processedEvents ? processedEvents.eventId : scanAudit.clientScanId;
  return (
    await db
      .select()
      .from(table as typeof processedEvents)
      .where(inArray(column, ids))
  ).length;
};

/**
 * A driver's morning: load, scan (one scan too many), a hold without a reason (refused), hold and resume, a note, a credit,
 * the payment of what is open, a service value, and the completion of delivery 1.
 */
async function playDay(client: TourlineClient, tourId: string, ids: { paymentMethodId: string; serviceId: string }) {
  const tour = client.view(tourId)!;
  const [d1, d2] = tour.deliveries;
  const line = d1.positions.find((p) => p.scannable)!;
  const scans: string[] = [];
  for (let i = 0; i < 4; i++) scans.push((await client.scan(line.id)).eventId);
  const events = [...scans];
  const blankHold = (await client.holdDelivery(d2.id, '  ')).eventId;
  events.push((await client.holdDelivery(d2.id, 'Kunde nicht da')).eventId);
  events.push((await client.resumeDelivery(d2.id)).eventId);
  const note = await client.createNote(d1.id, { text: 'Hintereingang benutzen' });
  events.push(note.eventId);
  events.push((await client.setCredit(d2.id, { amountCents: 1000, reason: 'Bruch' })).eventId);
  events.push((await client.setServiceValue(d2.id, ids.serviceId, { numericValue: 2 })).eventId);
  events.push((await client.recordPayment(d2.id, { paymentMethodId: ids.paymentMethodId })).eventId);
  const completion = await client.complete(d1.id, {
    customerSignature: png,
    driverSignature: png,
    acknowledgements: { receiptConfirmed: true, notesAcknowledged: true, acknowledgedNoteIds: [note.noteId] },
  });
  return {
    scans,
    applied: events.filter((e) => e !== scans[3]),
    rejected: [scans[3], blankHold],
    completionId: completion.eventId,
    d1,
    d2,
  };
}

async function masterData(server: TestServer, pnr: number) {
  const token = await server.token(pnr);
  const suffix = `${pnr}-${Math.random().toString(36).slice(2, 8)}`;
  const method = await server.post('/payment-methods', { code: `BAR-${suffix}`, name: 'Bar', collectOnSite: true }, { token });
  const service = await server.post(
    '/services',
    { key: `stairs-${suffix}`, name: 'Stockwerke', kind: 'numeric', minValue: 0, maxValue: 10 },
    { token },
  );
  expect([method.status, service.status]).toEqual([200, 200]);
  return { paymentMethodId: method.body.paymentMethod.id as string, serviceId: service.body.service.id as string };
}

describe.each(databaseKinds)('client SDK against the real service on %s', { timeout: 90_000 }, (kind: DatabaseKind) => {
  async function runningServer(env: Record<string, string> = {}, options = {}) {
    const server = await startTestServer(kind, env, options);
    cleanups.push(() => server.close());
    return server;
  }

  it('applies every event exactly once when requests are dropped and answers are lost after the commit', async () => {
    const server = await runningServer();
    const { pnr, tourId, seeded } = await driverWithTour(server);
    await server.db
      .update(deliveries)
      .set({ erpOpenAmountCents: 5000 })
      .where(inArray(deliveries.id, [seeded.deliveries[1].delivery.id]));
    const ids = await masterData(server, pnr);
    const faults = new FaultInjector(server.url);
    // The day's two refusals are the service's here (test/sdk/verdicts.integration.test.ts has the device's).
    const client = await openClient(sdkOptions(() => server, pnr, faults, { checkLocally: false }));
    await client.loadTours({ date: seeded.tour.tourDate });
    await client.loadMasterData();
    const rejected: string[] = [];
    client.on('rejected', (r) => rejected.push(r.id));

    const day = await playDay(client, tourId, ids);
    // Optimistic: the driver sees the work at once, with the shared rules (the fourth scan does not fit).
    const optimistic = client.view(tourId)!;
    expect(optimistic.deliveries.find((d) => d.id === day.d1.id)).toMatchObject({ state: 'completed' });
    expect(optimistic.deliveries.find((d) => d.id === day.d2.id)).toMatchObject({ openAmountCents: 4000, credit: { amountCents: 1000 } });

    faults.drop(on('/sync/push'));
    faults.loseResponse(on('/sync/push'));
    faults.loseResponse(on('/complete'));
    faults.drop(on('/sync/changes'));
    await syncUntilSettled(client);

    expect(faults.log.filter((l) => l.outcome !== 'sent').map((l) => `${l.outcome} ${l.path.split('/').pop()}`)).toEqual([
      'dropped push',
      'lost push',
      'lost complete',
      'dropped changes',
    ]);
    expect(await countWhere(server.db, scanAudit, day.scans)).toBe(3);
    expect(await countWhere(server.db, processedEvents, day.applied)).toBe(day.applied.length);
    expect(
      await server.db
        .select()
        .from(completions)
        .where(inArray(completions.clientEventId, [day.completionId])),
    ).toHaveLength(1);
    expect(
      await server.db
        .select()
        .from(creditEvents)
        .where(inArray(creditEvents.deliveryId, [day.d2.id])),
    ).toHaveLength(1);
    expect(
      await server.db
        .select()
        .from(paymentProtocol)
        .where(inArray(paymentProtocol.deliveryId, [day.d2.id])),
    ).toHaveLength(1);
    expect(rejected).toEqual(day.rejected);
    expect(client.rejected()).toMatchObject([
      { id: day.rejected[0], type: 'scan', code: 'quantity_exceeded', message: expect.any(String) },
      { id: day.rejected[1], type: 'delivery.hold', code: 'validation' },
    ]);
    await expectViewEqualsServer(client, server, pnr, tourId);
    const settled = client.view(tourId)!.deliveries.find((d) => d.id === day.d1.id)!;
    expect(settled.positions.find((p) => p.scannable)!.scannedQuantity).toBe(3);
    expect(settled.state).toBe('completed');
  });

  it('keeps working offline and delivers everything once the network is back', async () => {
    const server = await runningServer();
    const { pnr, tourId, seeded } = await driverWithTour(server);
    const network = await FaultyNetwork.start(server.url);
    cleanups.push(() => network.close());
    const client = await openClient(sdkOptions(() => server, pnr, network));
    await client.loadTours({ date: seeded.tour.tourDate });
    client.start();
    network.cut();
    const line = seeded.deliveries[0].items.find((i) => i.requiredQuantity === 3)!;
    const scans = [(await client.scan(line.id)).eventId, (await client.scan(line.id)).eventId];
    const hold = await client.holdDelivery(seeded.deliveries[1].delivery.id, 'Tor zu');
    await vi.waitFor(() => expect(client.status()).toMatchObject({ online: false, pendingCount: 3, lastError: { code: 'network' } }), {
      timeout: 5000,
    });
    expect(
      client
        .view(tourId)!
        .deliveries.find((d) => d.id === line.deliveryId)!
        .positions.find((p) => p.id === line.id)!.scannedQuantity,
    ).toBe(2);

    expect(network.stats.refused).toBeGreaterThan(0);
    network.restore();
    await client.settled(15_000);
    expect(client.status()).toMatchObject({ online: true, pendingCount: 0, rejected: [] });
    expect((await waitForSettled(server.db, [...scans, hold.eventId])).map((e) => e.applied)).toEqual([true, true, true]);
    await expectViewEqualsServer(client, server, pnr, tourId);
  });

  it('follows another device of the account live, across a cut socket, and falls back to pulling without one', async () => {
    const server = await runningServer();
    const { pnr, tourId, seeded } = await driverWithTour(server);
    const network = await FaultyNetwork.start(server.url);
    cleanups.push(() => network.close());
    const webSocket = (url: string, protocols: string[]) => new WebSocket(url, protocols) as unknown as WebSocketLike;
    const watcher = await openClient(sdkOptions(() => server, pnr, network, { webSocket, pollIntervalMs: 60_000 }));
    const puller = await openClient(sdkOptions(() => server, pnr, new FaultInjector(server.url)));
    const other = await openClient(sdkOptions(() => server, pnr, new FaultInjector(server.url)));
    for (const c of [watcher, puller, other]) await c.loadTours({ date: seeded.tour.tourDate });
    watcher.start();
    puller.start();
    await vi.waitFor(() => expect(watcher.status().liveConnected).toBe(true), { timeout: 5000 });

    const line = seeded.deliveries[0].items.find((i) => i.requiredQuantity === 3)!;
    const scannedOn = (c: TourlineClient) =>
      c
        .serverTour(tourId)!
        .deliveries.find((d) => d.id === line.deliveryId)!
        .positions.find((p) => p.id === line.id)!.scannedQuantity;
    await other.scan(line.id);
    await other.sync();
    await vi.waitFor(() => expect(scannedOn(watcher)).toBe(1), { timeout: 5000 });

    // A blip: every open connection of the watcher is reset, its socket among them.
    network.cut();
    network.restore();
    await other.scan(line.id);
    await other.sync();
    // The poll interval is a minute here: only the reconnected socket's resume can bring the change.
    await vi.waitFor(() => expect(scannedOn(watcher)).toBe(2), { timeout: 10_000 });
    await vi.waitFor(() => expect(scannedOn(puller)).toBe(2), { timeout: 5000 });
    await expectViewEqualsServer(watcher, server, pnr, tourId);
    await expectViewEqualsServer(puller, server, pnr, tourId);
  });

  it('never counts its own scan twice in the view, whichever of the answer and the live change comes first, without a pull', async () => {
    const server = await runningServer();
    const { pnr, tourId, seeded } = await driverWithTour(server);
    const faults = new FaultInjector(server.url);
    const client = await openClient(sdkOptions(() => server, pnr, faults, { webSocket: faults.webSocket, pollIntervalMs: 60_000 }));
    await client.loadTours({ date: seeded.tour.tourDate });
    const line = seeded.deliveries[0].items.find((i) => i.requiredQuantity === 3)!;
    const quantity = (tour: TourDetails | undefined) =>
      tour!.deliveries.find((d) => d.id === line.deliveryId)!.positions.find((p) => p.id === line.id)!.scannedQuantity;
    let scans = 0;
    const seen: number[] = [];
    client.on('change', () => seen.push(quantity(client.view(tourId)) - scans));
    client.start();
    await vi.waitFor(() => expect(client.status().liveConnected).toBe(true), { timeout: 5000 });
    // From here on every pull fails: only the socket brings the changes.
    faults.drop(on('/sync/changes'), 1000);
    for (let i = 1; i <= 3; i++) {
      scans = i;
      await client.scan(line.id);
      await vi.waitFor(() => expect([quantity(client.serverTour(tourId)), client.outbox.all().length]).toEqual([i, 0]), { timeout: 5000 });
    }
    expect(quantity(client.view(tourId))).toBe(3);
    expect(Math.max(...seen)).toBe(0);
  });

  inProcess.it('loses nothing when the server restarts, and nothing when the app restarts with a file store', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tourline-sdk-server-'));
    const appDir = await mkdtemp(path.join(os.tmpdir(), 'tourline-sdk-app-'));
    cleanups.push(
      () => rm(dataDir, { recursive: true, force: true }),
      () => rm(appDir, { recursive: true, force: true }),
    );
    // PGlite keeps its data in a directory; PostgreSQL keeps it in the database the second server opens again.
    let server = kind === 'pglite' ? await runningServer({ DATA_DIR: dataDir }, { ephemeral: false }) : await runningServer();
    const env: Record<string, string> = kind === 'pglite' ? { DATA_DIR: dataDir } : { DATABASE_URL: server.ctx.config.databaseUrl! };
    const { pnr, tourId, seeded } = await driverWithTour(server);
    const faults = new FaultInjector(server.url);
    const first = await TourlineClient.open(sdkOptions(() => server, pnr, faults, { storage: await FileStore.open(appDir) }));
    await first.loadTours({ date: seeded.tour.tourDate });
    const line = seeded.deliveries[0].items.find((i) => i.requiredQuantity === 3)!;
    const events = [(await first.scan(line.id)).eventId];
    faults.loseResponse(on('/sync/push'));
    await expect(first.sync()).rejects.toThrow(/hang up/);

    await server.close();
    server = kind === 'pglite' ? await runningServer(env, { ephemeral: false }) : await runningServer(env);
    faults.target = server.url;
    events.push((await first.scan(line.id)).eventId);
    events.push((await first.createNote(line.deliveryId, { text: 'Nach dem Neustart' })).eventId);
    // The app dies without closing anything; a new process opens the same directory.
    const second = await openClient(sdkOptions(() => server, pnr, faults, { storage: await FileStore.open(appDir) }));
    expect(second.outbox.pending().map((e) => e.id)).toEqual(events);
    await syncUntilSettled(second);
    expect(await countWhere(server.db, processedEvents, events)).toBe(3);
    expect(await countWhere(server.db, scanAudit, events)).toBe(2);
    await expectViewEqualsServer(second, server, pnr, tourId);
  });

  it('uploads a note image once, adds its text, and lets later edits of the note follow it', async () => {
    const server = await runningServer();
    const { pnr, tourId, seeded } = await driverWithTour(server);
    const faults = new FaultInjector(server.url);
    const client = await openClient(sdkOptions(() => server, pnr, faults));
    await client.loadTours({ date: seeded.tour.tourDate });
    const deliveryId = seeded.deliveries[0].delivery.id;
    const photo = new Uint8Array(
      await sharp({ create: { width: 64, height: 48, channels: 3, background: '#884400' } })
        .jpeg()
        .toBuffer(),
    );
    const { noteId } = await client.createImageNote(deliveryId, {
      image: photo,
      contentType: 'image/jpeg',
      text: 'Schaden an der Palette',
    });
    const local = client.delivery(deliveryId)!.notes.find((n) => n.id === noteId)!;
    expect(await client.localImage(local.imageAttachment!)).toEqual(photo);
    await client.updateNote(deliveryId, noteId, { text: 'Schaden an der Palette, fotografiert' });
    // The answer to the text follow-up is lost after the commit: the resend must neither upload again nor apply twice.
    faults.loseResponse(on('/sync/push'));
    await syncUntilSettled(client);

    const uploads = faults.log.filter((l) => l.path.endsWith('/notes/image'));
    expect(uploads.map((u) => u.outcome)).toEqual(['sent']);
    const notes = client.view(tourId)!.deliveries.find((d) => d.id === deliveryId)!.notes;
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({ text: 'Schaden an der Palette, fotografiert', imageAttachment: expect.stringMatching(/^~/) });
    expect(client.rejected()).toEqual([]);
    const read = await server.get<TourDetails>(`/tours/${tourId}`, { token: await server.token(pnr) });
    const serverNotes = read.body.deliveries.find((d) => d.id === deliveryId)!.notes;
    expect(serverNotes).toHaveLength(1);
    expect(notes[0]).toMatchObject({
      id: serverNotes[0].id,
      text: serverNotes[0].text,
      imageAttachment: serverNotes[0].imageAttachment,
      imageAttachmentId: serverNotes[0].imageAttachmentId,
    });
  });
});
