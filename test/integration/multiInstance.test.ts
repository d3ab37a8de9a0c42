import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../server/server.js';
import { createPostgresDatabase } from '../helpers/databases.js';
import { newTour, scanEvent } from '../helpers/factories.js';
import { waitersReach } from '../helpers/lockWaiters.js';
import { tourPayload } from '../helpers/tourPayloads.js';
import { TestServer, testConfig } from '../helpers/server.js';
import { SyncSocket } from '../helpers/wsClient.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let nextAccount = 8100;

// PostgreSQL only: on PGlite there is one process per database, so there is no second instance.
describe('two instances on one PostgreSQL', () => {
  let url: string;
  let a: TestServer;
  let b: TestServer;

  beforeAll(async () => {
    url = await createPostgresDatabase();
    a = new TestServer(await startServer(await testConfig('postgres', { DATABASE_URL: url }), { ephemeral: true }));
    b = new TestServer(await startServer(await testConfig('postgres', { DATABASE_URL: url }), { ephemeral: true }));
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  /** Runs `work` on a second connection inside an open transaction: another writer holding locks. */
  async function withLockHolder(work: (holder: pg.Client) => Promise<void>) {
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await work(holder);
    } finally {
      await holder.end();
    }
  }

  /** One driver with a token for each instance (each development issuer signs its own). */
  async function driver() {
    const personalnummer = nextAccount++;
    const tokenA = await a.token(personalnummer);
    const tokenB = await b.token(personalnummer);
    const cursor = (await a.get('/sync/cursor', { token: tokenA })).body.cursor as string;
    return { personalnummer, tokenA, tokenB, cursor };
  }

  async function listenOn(server: TestServer, token: string, cursor: string) {
    const socket = await SyncSocket.open(server.url, { token });
    socket.send({ type: 'resume', cursor });
    await socket.next((m) => m.type === 'changes');
    return socket;
  }

  it('share one database installation, so a cursor from one instance resumes on the other', async () => {
    expect(a.ctx.database.epoch).toBe(b.ctx.database.epoch);
    const { tokenA, tokenB, cursor } = await driver();
    const car = (await a.post('/me/cars', { plate: `MI-${randomUUID().slice(0, 8)}` }, { token: tokenA })).body.car;
    const pulled = await b.get(`/sync/changes?since=${cursor}`, { token: tokenB });
    expect(pulled.status).toBe(200);
    expect(pulled.body.changes.map((c: { id: string }) => c.id)).toEqual([car.id]);
  });

  it('delivers a change committed through instance A to a WebSocket client of instance B', async () => {
    const { tokenA, tokenB, cursor } = await driver();
    const socket = await listenOn(b, tokenB, cursor);
    try {
      const car = (await a.post('/me/cars', { plate: `MI-${randomUUID().slice(0, 8)}` }, { token: tokenA })).body.car;
      const live = await socket.next((m) => m.type === 'changes', 1);
      expect(live.changes).toEqual([expect.objectContaining({ entity: 'car', id: car.id, data: car })]);
    } finally {
      await socket.close();
    }
  });

  it('delivers events pushed through instance A to a WebSocket client of instance B', async () => {
    const { personalnummer, tokenA, tokenB, cursor } = await driver();
    const tour = await newTour(a.db, {
      accountId: personalnummer,
      positions: [{ scannable: true, quantity: 3, scannedQuantity: 0, state: 'InProgress' }],
    });
    const line = tour.deliveries[0].items[0];
    const socket = await listenOn(b, tokenB, cursor);
    try {
      const pushed = await a.post(
        '/sync/push',
        {
          clientId: 'phone-a',
          events: [{ eventId: randomUUID(), occurredAt: new Date().toISOString(), type: 'scan', deliveryItemId: line.id, action: 'scan' }],
        },
        { token: tokenA },
      );
      expect(pushed.body.results[0].status).toBe('applied');
      const live = await socket.next((m) => m.type === 'changes' && (m.changes ?? []).some((c) => c.id === line.id), 1);
      expect(live.changes!.find((c) => c.id === line.id)!.data).toMatchObject({ scannedQuantity: 1 });
    } finally {
      await socket.close();
    }
  });

  it('gives clients of both instances every change once and in the same order while both instances write', async () => {
    const { tokenA, tokenB, cursor } = await driver();
    const onA = await listenOn(a, tokenA, cursor);
    const onB = await listenOn(b, tokenB, cursor);
    try {
      const plates = [...Array(20).keys()].map((i) => `MO-${i}-${randomUUID().slice(0, 6)}`);
      await Promise.all(plates.map((plate, i) => (i % 2 ? a : b).post('/me/cars', { plate }, { token: i % 2 ? tokenA : tokenB })));
      await onA.next(() => onA.changes().length >= 20);
      await onB.next(() => onB.changes().length >= 20);
      await sleep(300);
      const seqsA = onA.changes().map((c) => c.seq);
      expect(seqsA).toHaveLength(20);
      expect([...seqsA].sort((x, y) => x - y)).toEqual(seqsA);
      expect(onB.changes().map((c) => c.seq)).toEqual(seqsA);
    } finally {
      await onA.close();
      await onB.close();
    }
  });

  it('reports a delivery as moved when it moved to another driver while the sync waited for its lock', async () => {
    const [x, y, z] = [await driver(), await driver(), await driver()];
    const mine = tourPayload(x.personalnummer, { date: '2026-05-04', deliveries: 1 });
    await a.post('/sync/tour', mine, { token: x.tokenA });
    const zTour = (
      await a.post('/sync/tour', { ...tourPayload(z.personalnummer, { date: '2026-05-04' }), deliveries: [] }, { token: z.tokenA })
    ).body.tour.id;
    const { belegnummer } = mine.deliveries[0];
    await withLockHolder(async (holder) => {
      // Another writer holds the delivery and moves it to driver Z; driver Y's sync waits for it meanwhile.
      const [{ id }] = (await holder.query('SELECT id FROM deliveries WHERE belegnummer = $1 FOR UPDATE', [belegnummer])).rows;
      // Moving a delivery between accounts is the ERP connector's job: the admin key.
      const taking = a.post(
        '/sync/tour',
        { ...tourPayload(y.personalnummer, { date: '2026-05-04' }), deliveries: mine.deliveries },
        { admin: true },
      );
      await waitersReach(holder, 1);
      await holder.query('UPDATE deliveries SET tour_id = $1 WHERE id = $2', [zTour, id]);
      await holder.query('COMMIT');

      const taken = await taking;
      expect(taken.status).toBe(200);
      expect(taken.body.deliveries).toMatchObject({ created: 0, moved: 1 });
      const forZ = (await a.get(`/sync/changes?since=${z.cursor}`, { token: z.tokenA })).body.changes;
      expect(forZ).toContainEqual(expect.objectContaining({ entity: 'delivery', op: 'delete', id }));
    });
  });

  it('reorders a tour that gained a delivery while the reorder waited for its lock, leaving the newcomer in place', async () => {
    const x = await driver();
    const tourId = (await a.post('/sync/tour', tourPayload(x.personalnummer, { date: '2026-05-05', deliveries: 2 }), { token: x.tokenA }))
      .body.tour.id;
    const other = (await a.post('/sync/tour', tourPayload(x.personalnummer, { date: '2026-05-06', deliveries: 1 }), { token: x.tokenA }))
      .body.tour.id;
    const ids: string[] = (await a.get(`/tours/${tourId}`, { token: x.tokenA })).body.deliveries.map((d: { id: string }) => d.id);
    await withLockHolder(async (holder) => {
      await holder.query('SELECT id FROM deliveries WHERE id = $1 FOR UPDATE', [ids[0]]);
      const reordering = a.put(`/tours/${tourId}/delivery-order`, { deliveryIds: [ids[1], ids[0]] }, { token: x.tokenA });
      await waitersReach(holder, 1);
      // A delivery joins the tour meanwhile, as a re-sync would add it.
      const [{ id: newcomer, sort_order: place }] = (
        await holder.query('UPDATE deliveries SET tour_id = $1 WHERE tour_id = $2 RETURNING id, sort_order', [tourId, other])
      ).rows;
      await holder.query('COMMIT');

      expect((await reordering).status).toBe(200);
      const after = (await a.get(`/tours/${tourId}`, { token: x.tokenA })).body.deliveries;
      expect(after.find((d: { id: string }) => d.id === ids[1]).sortOrder).toBe(0);
      expect(after.find((d: { id: string }) => d.id === newcomer).sortOrder).toBe(place);
    });
  });

  it('lets a first reorder wait for a re-sync that holds the tour, without a deadlock', async () => {
    const x = await driver();
    const tourId = (await a.post('/sync/tour', tourPayload(x.personalnummer, { date: '2026-05-07', deliveries: 2 }), { token: x.tokenA }))
      .body.tour.id;
    const ids: string[] = (await a.get(`/tours/${tourId}`, { token: x.tokenA })).body.deliveries.map((d: { id: string }) => d.id);
    await withLockHolder(async (holder) => {
      // As a re-sync does: the tour's row first, then its deliveries.
      await holder.query('SELECT id FROM tours WHERE id = $1 FOR NO KEY UPDATE', [tourId]);
      const reordering = a.put(`/tours/${tourId}/delivery-order`, { deliveryIds: [ids[1], ids[0]] }, { token: x.tokenA });
      await waitersReach(holder, 1);
      await holder.query('SELECT id FROM deliveries WHERE tour_id = $1 ORDER BY id FOR UPDATE', [tourId]);
      await holder.query('COMMIT');
      expect((await reordering).status).toBe(200);
    });
  });

  it('checks a payment against its method as it is once the delivery is locked', async () => {
    const x = await driver();
    const tourId = (await a.post('/sync/tour', tourPayload(x.personalnummer, { date: '2026-05-08', deliveries: 1 }), { token: x.tokenA }))
      .body.tour.id;
    const [deliveryId] = (await a.get(`/tours/${tourId}`, { token: x.tokenA })).body.deliveries.map((d: { id: string }) => d.id);
    const method = (
      await a.post('/payment-methods', { code: `BAR-${randomUUID().slice(0, 8)}`, name: 'Bar', collectOnSite: true }, { token: x.tokenA })
    ).body.paymentMethod;
    await withLockHolder(async (holder) => {
      await holder.query('SELECT id FROM deliveries WHERE id = $1 FOR UPDATE', [deliveryId]);
      const paying = a.post(
        `/deliveries/${deliveryId}/payment`,
        { clientEventId: randomUUID(), expectedAmountCents: 1500, paymentMethodId: method.id },
        { token: x.tokenA },
      );
      await waitersReach(holder, 1);
      // The back office deactivates the method while the payment waits for the delivery.
      expect((await a.patch(`/payment-methods/${method.id}`, { active: false }, { token: x.tokenA })).status).toBe(200);
      await holder.query('COMMIT');
      const paid = await paying;
      expect(paid.status).toBe(400);
      expect(paid.body.errors).toEqual([expect.objectContaining({ path: 'paymentMethodId' })]);
    });
    expect((await a.get(`/tours/${tourId}`, { token: x.tokenA })).body.deliveries[0].latestPayment).toBeNull();
  });

  describe('four-eyes review against changes in flight', () => {
    const resolve = (deliveryId: string) => a.post(`/admin/reviews/${deliveryId}/resolve`, { processor: 'Frau Weber' }, { admin: true });
    const pendingIds = async () => (await a.get('/admin/reviews', { admin: true })).body.map((r: { delivery_id: string }) => r.delivery_id);

    it('keeps a removal pending that began before a confirmation and was written after it', async () => {
      const { personalnummer, tokenA } = await driver();
      const tour = await newTour(a.db, {
        accountId: personalnummer,
        deliveries: 2,
        positions: [{ quantity: 2, scannedQuantity: 0, state: 'InProgress' }],
      });
      // The push locks its deliveries in id order: held at the first, it has not reached the second yet.
      const [first, second] = tour.deliveries.sort((x, y) => x.delivery.id.localeCompare(y.delivery.id));
      await withLockHolder(async (holder) => {
        await holder.query('SELECT id FROM deliveries WHERE id = $1 FOR UPDATE', [first.delivery.id]);
        const pushing = a.post(
          '/sync/push',
          { clientId: 'phone', events: [scanEvent(first.items[0].id, 'scan'), scanEvent(second.items[0].id, 'remove')] },
          { token: tokenA },
        );
        await waitersReach(holder, 1);
        expect((await resolve(second.delivery.id)).status).toBe(204);
        await holder.query('COMMIT');
        expect((await pushing).body.results.map((r: { status: string }) => r.status)).toEqual(['applied', 'applied']);
      });
      expect(await pendingIds()).toContain(second.delivery.id);
    });

    it('lets a confirmation wait for a change in flight on its delivery, so that it covers it', async () => {
      const { personalnummer, tokenA } = await driver();
      const {
        deliveries: [{ delivery, items }],
      } = await newTour(a.db, { accountId: personalnummer, positions: [{ quantity: 2, scannedQuantity: 0, state: 'InProgress' }] });
      let resolved = false;
      await withLockHolder(async (holder) => {
        await holder.query('SELECT id FROM deliveries WHERE id = $1 FOR UPDATE', [delivery.id]);
        const pushing = a.post('/sync/push', { clientId: 'phone', events: [scanEvent(items[0].id, 'remove')] }, { token: tokenA });
        await waitersReach(holder, 1);
        const resolving = resolve(delivery.id).then((response) => {
          resolved = true;
          return response;
        });
        await waitersReach(holder, 2);
        expect(resolved).toBe(false);
        await holder.query('COMMIT');
        expect((await pushing).body.results[0].status).toBe('applied');
        expect((await resolving).status).toBe(204);
      });
      expect(await pendingIds()).not.toContain(delivery.id);
    });
  });

  it('catches up after its LISTEN connection was cut, including changes committed while it was gone', async () => {
    const { tokenA, tokenB, cursor } = await driver();
    const socket = await listenOn(b, tokenB, cursor);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'LISTEN%'`);
      const car = (await a.post('/me/cars', { plate: `ML-${randomUUID().slice(0, 8)}` }, { token: tokenA })).body.car;
      const live = await socket.next((m) => m.type === 'changes', 1, 15_000);
      expect(live.changes!.map((c) => c.id)).toEqual([car.id]);
      const listening = async () =>
        Number(
          (
            await admin.query(`SELECT count(*) AS n FROM pg_stat_activity
        WHERE datname = current_database() AND query ILIKE 'LISTEN%'`)
          ).rows[0].n,
        );
      for (let i = 0; i < 50 && (await listening()) < 2; i++) await sleep(100);
      expect(await listening()).toBe(2);
    } finally {
      await admin.end();
      await socket.close();
    }
  });
});
