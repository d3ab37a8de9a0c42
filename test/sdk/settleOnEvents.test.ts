import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inArray } from 'drizzle-orm';
import { describe, expect, it, vi } from 'vitest';
import { MemoryStore, TourlineClient } from '../../client-sdk/index.js';
import { FileStore } from '../../client-sdk/node.js';
import { deliveryItems, processedEvents } from '../../server/db/schema.js';
import type { TourDetails } from '../../shared/schemas/deliveries.js';
import { databaseKinds, type DatabaseKind } from '../helpers/databases.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { FaultInjector, on } from './faults.js';
import { cleanups, driverWithTour, expectViewEqualsServer, openClient, sdkOptions } from './service.js';

/**
 * The view of a line must always be the server's state plus exactly this client's entries the
 * server has not applied yet: never an applied entry on top of a state that holds it.
 */
describe.each(databaseKinds)(
  'the SDK settles its entries on the events the changes name, on %s',
  { timeout: 90_000 },
  (kind: DatabaseKind) => {
    async function setup() {
      const server = await startTestServer(kind);
      cleanups.push(() => server.close());
      const { pnr, tourId, seeded } = await driverWithTour(server);
      const line = seeded.deliveries[0].items.find((i) => i.requiredQuantity === 3)!;
      return { server, pnr, tourId, seeded, line };
    }
    const scannedIn = (tour: TourDetails | undefined, lineId: string) =>
      tour!.deliveries.flatMap((d) => d.positions).find((p) => p.id === lineId)!.scannedQuantity;

    /** Checks the invariant against the real service's state, and records what every 'change' showed. */
    function watch(client: TourlineClient, server: TestServer, tourId: string, lineId: string) {
      let scans = 0;
      const shown: number[] = [];
      client.on('change', () => shown.push(scannedIn(client.view(tourId), lineId)));
      return {
        scanned: () => {
          scans += 1;
        },
        /** Never more than the scans made so far, at any change the app saw. */
        neverMore: () => expect(Math.max(0, ...shown)).toBeLessThanOrEqual(scans),
        async holds() {
          // The client first, in one synchronous look; then the service, whose state only grows meanwhile:
          // the events applied, then the line (which holds every event read as applied before it).
          const ids = client.outbox
            .all()
            .filter((e) => e.state !== 'rejected')
            .map((e) => e.id);
          const copy = scannedIn(client.serverTour(tourId), lineId);
          expect(scannedIn(client.view(tourId), lineId)).toBe(copy + ids.length);
          const applied = ids.length ? await server.db.select().from(processedEvents).where(inArray(processedEvents.eventId, ids)) : [];
          const [row] = await server.db
            .select({ scanned: deliveryItems.scannedQuantity })
            .from(deliveryItems)
            .where(inArray(deliveryItems.id, [lineId]));
          // The copy may lag behind the service, but what it shows plus what waits never counts an applied entry twice.
          const waiting = ids.length - applied.length;
          expect(copy + applied.length).toBeLessThanOrEqual(row.scanned);
          return { server: row.scanned, copy, waiting, applied: applied.length };
        },
      };
    }

    it('settles on the live change when every push answer is lost while the socket is up', async () => {
      const { server, pnr, tourId, seeded, line } = await setup();
      const faults = new FaultInjector(server.url);
      const client = await openClient(
        sdkOptions(() => server, pnr, faults, {
          webSocket: faults.webSocket,
          pollIntervalMs: 60_000,
          backoff: { baseMs: 2000, capMs: 2000 },
        }),
      );
      await client.loadTours({ date: seeded.tour.tourDate });
      const check = watch(client, server, tourId, line.id);
      client.start();
      await vi.waitFor(() => expect(client.status().liveConnected).toBe(true), { timeout: 5000 });
      faults.loseResponse(on('/sync/push'), 1000);
      faults.drop(on('/sync/changes'), 1000);
      for (let i = 1; i <= 3; i++) {
        check.scanned();
        const handle = await client.scan(line.id);
        await check.holds();
        // Only the socket can tell: every answer is lost, and the resend is two seconds away.
        await expect(handle.outcome).resolves.toMatchObject({ status: 'applied' });
        expect(await check.holds()).toEqual({ server: i, copy: i, waiting: 0, applied: 0 });
        expect(client.outbox.all()).toHaveLength(0);
      }
      check.neverMore();
      expect(faults.log.filter((l) => l.outcome === 'lost')).toHaveLength(3);
      await expectViewEqualsServer(client, server, pnr, tourId);
    });

    it('settles on the pulled change when there is no socket and the push answer was lost', async () => {
      const { server, pnr, tourId, seeded, line } = await setup();
      const faults = new FaultInjector(server.url);
      const client = await openClient(
        sdkOptions(() => server, pnr, faults, { pollIntervalMs: 100, backoff: { baseMs: 60_000, capMs: 60_000 } }),
      );
      await client.loadTours({ date: seeded.tour.tourDate });
      const check = watch(client, server, tourId, line.id);
      faults.loseResponse(on('/sync/push'), 1000);
      check.scanned();
      await client.scan(line.id);
      await expect(client.sync()).rejects.toThrow(/hang up/);
      expect(await check.holds()).toMatchObject({ server: 1, copy: 0, applied: 1 });
      // The next pull brings the change naming the scan: settled without any resend (the backoff is a minute).
      await client.pull();
      expect(await check.holds()).toEqual({ server: 1, copy: 1, waiting: 0, applied: 0 });
      expect(client.outbox.all()).toHaveLength(0);
      expect(faults.log.filter((l) => l.path.endsWith('/sync/push'))).toHaveLength(1);
      check.neverMore();
    });

    it("does not settle one device's entry on another device's change of the same account", async () => {
      const { server, pnr, tourId, seeded, line } = await setup();
      const faultsA = new FaultInjector(server.url);
      const faultsB = new FaultInjector(server.url);
      const a = await openClient(sdkOptions(() => server, pnr, faultsA, { webSocket: faultsA.webSocket, pollIntervalMs: 60_000 }));
      const b = await openClient(
        sdkOptions(() => server, pnr, faultsB, {
          webSocket: faultsB.webSocket,
          pollIntervalMs: 60_000,
          backoff: { baseMs: 60_000, capMs: 60_000 },
        }),
      );
      for (const c of [a, b]) await c.loadTours({ date: seeded.tour.tourDate });
      const checkB = watch(b, server, tourId, line.id);
      b.start();
      await vi.waitFor(() => expect(b.status().liveConnected).toBe(true), { timeout: 5000 });
      // B's scan waits (its pushes never arrive); A's scan is applied and its answer lost.
      faultsB.drop(on('/sync/push'), 1000);
      faultsA.loseResponse(on('/sync/push'), 1000);
      checkB.scanned();
      await b.scan(line.id);
      checkB.scanned();
      await a.scan(line.id);
      await expect(a.sync()).rejects.toThrow(/hang up/);
      await vi.waitFor(() => expect(scannedIn(b.serverTour(tourId), line.id)).toBe(1), { timeout: 5000 });
      expect(await checkB.holds()).toEqual({ server: 1, copy: 1, waiting: 1, applied: 0 });
      expect(scannedIn(b.view(tourId), line.id)).toBe(2);
      expect(b.outbox.pending()).toHaveLength(1);
      checkB.neverMore();
    });

    it('settles after an app restart between the commit and the change, without sending again', async () => {
      const { server, pnr, tourId, seeded, line } = await setup();
      const appDir = await mkdtemp(path.join(os.tmpdir(), 'tourline-settle-'));
      cleanups.push(() => rm(appDir, { recursive: true, force: true }));
      const faults = new FaultInjector(server.url);
      const first = await TourlineClient.open(sdkOptions(() => server, pnr, faults, { storage: await FileStore.open(appDir) }));
      await first.loadTours({ date: seeded.tour.tourDate });
      const { eventId } = await first.scan(line.id);
      faults.loseResponse(on('/sync/push'));
      await expect(first.sync()).rejects.toThrow(/hang up/);
      // The app dies; a new process opens the same directory and sends nothing before it pulls.
      const second = await openClient(
        sdkOptions(() => server, pnr, faults, { storage: await FileStore.open(appDir), backoff: { baseMs: 60_000, capMs: 60_000 } }),
      );
      expect(second.outbox.pending().map((e) => e.id)).toEqual([eventId]);
      const check = watch(second, server, tourId, line.id);
      check.scanned();
      expect(await check.holds()).toMatchObject({ server: 1, copy: 0, applied: 1 });
      await second.pull();
      expect(await check.holds()).toEqual({ server: 1, copy: 1, waiting: 0, applied: 0 });
      expect(faults.log.filter((l) => l.path.endsWith('/sync/push'))).toHaveLength(1);
      check.neverMore();
      await expectViewEqualsServer(second, server, pnr, tourId);
    });
    it("never shows an entry on top of the copy while the copy's writes are still under way", async () => {
      const { server, pnr, tourId, seeded, line } = await setup();
      // Slow storage (a cheap phone's flash): the copy takes a change at once, its writes take a while.
      class SlowStore extends MemoryStore {
        override async set(key: string, value: string) {
          await new Promise((r) => setTimeout(r, 40));
          return super.set(key, value);
        }
      }
      const faults = new FaultInjector(server.url);
      const client = await openClient(
        sdkOptions(() => server, pnr, faults, { storage: new SlowStore(), webSocket: faults.webSocket, pollIntervalMs: 60_000 }),
      );
      await client.loadTours({ date: seeded.tour.tourDate });
      client.start();
      await vi.waitFor(() => expect(client.status().liveConnected).toBe(true), { timeout: 5000 });
      let most = 0;
      const sampler = setInterval(() => {
        most = Math.max(most, scannedIn(client.view(tourId), line.id));
      }, 2);
      try {
        // The first answer arrives (settled by its seq); the second is lost (settled by the change naming it).
        await client.scan(line.id);
        await vi.waitFor(() => expect([scannedIn(client.serverTour(tourId), line.id), client.outbox.all().length]).toEqual([1, 0]), {
          timeout: 10_000,
        });
        faults.loseResponse(on('/sync/push'));
        await client.scan(line.id);
        await vi.waitFor(() => expect([scannedIn(client.serverTour(tourId), line.id), client.outbox.all().length]).toEqual([2, 0]), {
          timeout: 10_000,
        });
      } finally {
        clearInterval(sampler);
      }
      expect(most).toBe(2);
      expect(scannedIn(client.view(tourId), line.id)).toBe(2);
    });
  },
);
