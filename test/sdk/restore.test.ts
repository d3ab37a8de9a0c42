import { cp, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inArray } from 'drizzle-orm';
import pg from 'pg';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import type { TourlineClient } from '../../client-sdk/index.js';
import { completions, notes as noteRows, processedEvents, scanAudit } from '../../server/db/schema.js';
import { databaseKinds, type DatabaseKind } from '../helpers/databases.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { FaultInjector } from './faults.js';
import { cleanups, driverWithTour, expectViewEqualsServer, openClient, sdkOptions, syncUntilSettled } from './service.js';

const png = new Uint8Array(
  await sharp({ create: { width: 40, height: 20, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 1 } } })
    .png()
    .toBuffer(),
);
const photo = new Uint8Array(
  await sharp({ create: { width: 64, height: 48, channels: 3, background: '#884400' } })
    .jpeg()
    .toBuffer(),
);

/**
 * A backup as an operator takes it, the service stopped: on the embedded default the data
 * directory (database and documents) copied; on PostgreSQL the database copied inside the server
 * (`CREATE DATABASE ... TEMPLATE`, a file-level copy), with the document directory beside it.
 */
interface Installation {
  env: Record<string, string>;
  backUp(): Promise<void>;
  restore(): Promise<void>;
}

async function installation(kind: DatabaseKind): Promise<Installation> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tourline-restore-'));
  const backupDir = `${dataDir}.backup`;
  cleanups.push(
    () => rm(dataDir, { recursive: true, force: true }),
    () => rm(backupDir, { recursive: true, force: true }),
  );
  const copyFiles = async (from: string, to: string) => {
    await rm(to, { recursive: true, force: true });
    await cp(from, to, { recursive: true });
  };
  if (kind === 'pglite') {
    return {
      env: { DATA_DIR: dataDir },
      backUp: () => copyFiles(dataDir, backupDir),
      restore: () => copyFiles(backupDir, dataDir),
    };
  }
  const probe = await startTestServer('postgres', { DATA_DIR: dataDir }, { ephemeral: false });
  const databaseUrl = probe.ctx.config.databaseUrl!;
  await probe.close();
  const name = new URL(databaseUrl).pathname.slice(1);
  const admin = async (statements: string[]) => {
    const url = new URL(databaseUrl);
    url.pathname = '/postgres';
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    try {
      for (const statement of statements) await client.query(statement);
    } finally {
      await client.end();
    }
  };
  cleanups.push(() => admin([`DROP DATABASE IF EXISTS ${name}_backup WITH (FORCE)`]));
  return {
    env: { DATA_DIR: dataDir, DATABASE_URL: databaseUrl },
    async backUp() {
      await admin([`DROP DATABASE IF EXISTS ${name}_backup`, `CREATE DATABASE ${name}_backup TEMPLATE ${name}`]);
      await copyFiles(dataDir, backupDir);
    },
    async restore() {
      await admin([`DROP DATABASE ${name} WITH (FORCE)`, `CREATE DATABASE ${name} TEMPLATE ${name}_backup`]);
      await copyFiles(backupDir, dataDir);
    },
  };
}

/** After the backup: the rest of delivery 1 (two scans, a photo note, the completion) and delivery 2 held and resumed. */
async function actAfterBackup(client: TourlineClient, tourId: string, noteId: string) {
  const [d1, d2] = client.view(tourId)!.deliveries;
  const line = d1.positions.find((p) => p.scannable)!;
  const scans = [(await client.scan(line.id)).eventId, (await client.scan(line.id)).eventId];
  const hold = (await client.holdDelivery(d2.id, 'Kunde nicht da')).eventId;
  const resume = (await client.resumeDelivery(d2.id)).eventId;
  const image = await client.createImageNote(d1.id, { image: photo, contentType: 'image/jpeg', text: 'Palette beschädigt' });
  const completion = await client.complete(d1.id, {
    customerSignature: png,
    driverSignature: png,
    acknowledgements: { receiptConfirmed: true, notesAcknowledged: true, acknowledgedNoteIds: [noteId, image.noteId] },
  });
  return { scans, events: [...scans, hold, resume], imageNoteId: image.noteId, completionId: completion.eventId, deliveryId: d1.id };
}

const rowsOf = async (server: TestServer, ids: string[]) => ({
  processed: (await server.db.select().from(processedEvents).where(inArray(processedEvents.eventId, ids))).length,
  scans: (await server.db.select().from(scanAudit).where(inArray(scanAudit.clientScanId, ids))).length,
});

describe.each(databaseKinds)('a restore from an older backup on %s', { timeout: 120_000 }, (kind: DatabaseKind) => {
  it('loses nothing the phone was told was safe, and applies nothing twice', async () => {
    const install = await installation(kind);
    const start = async () => {
      const server = await startTestServer(kind, install.env, { ephemeral: false });
      cleanups.push(() => server.close());
      return server;
    };
    let server = await start();
    const { pnr, tourId, seeded } = await driverWithTour(server);
    const faults = new FaultInjector(server.url);
    const client = await openClient(sdkOptions(() => server, pnr, faults));
    await client.loadTours({ date: seeded.tour.tourDate });
    const line = seeded.deliveries[0].items.find((i) => i.requiredQuantity === 3)!;

    // Before the backup: one scan and a note, acknowledged and settled.
    const firstScan = (await client.scan(line.id)).eventId;
    const note = await client.createNote(line.deliveryId, { text: 'Hintereingang benutzen' });
    await syncUntilSettled(client);
    await server.close();
    await install.backUp();

    server = await start();
    faults.target = server.url;
    const after = await actAfterBackup(client, tourId, note.noteId);
    await syncUntilSettled(client);
    expect(client.outbox.size).toBe(0);
    expect(client.view(tourId)!.deliveries.find((d) => d.id === after.deliveryId)).toMatchObject({ state: 'completed' });

    // The service comes back from the backup: everything since is gone there.
    await server.close();
    await install.restore();
    server = await start();
    faults.target = server.url;
    expect(await rowsOf(server, after.events)).toEqual({ processed: 0, scans: 0 });

    await syncUntilSettled(client);
    const everything = [firstScan, note.eventId, ...after.events];
    expect(await rowsOf(server, everything)).toEqual({ processed: everything.length, scans: 3 });
    const completed = await server.db
      .select()
      .from(completions)
      .where(inArray(completions.deliveryId, [after.deliveryId]));
    expect(completed).toHaveLength(1);
    const notes = await server.db
      .select()
      .from(noteRows)
      .where(inArray(noteRows.deliveryId, [after.deliveryId]));
    expect(notes.map((n) => n.id).sort()).toEqual([note.noteId, after.imageNoteId].sort());
    expect(client.rejected()).toEqual([]);
    await expectViewEqualsServer(client, server, pnr, tourId);
    const delivery = client.view(tourId)!.deliveries.find((d) => d.id === after.deliveryId)!;
    expect(delivery).toMatchObject({ state: 'completed' });
    expect(delivery.positions.find((p) => p.id === line.id)).toMatchObject({ scannedQuantity: 3 });
  });
});
