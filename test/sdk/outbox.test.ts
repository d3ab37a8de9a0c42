import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TourlineClient, type TourlineClientOptions } from '../../client-sdk/index.js';
import { FileStore } from '../../client-sdk/node.js';
import { JsonStore, MemoryStore } from '../../client-sdk/storage/keyValue.js';
import { Outbox } from '../../client-sdk/outbox.js';
import type { SyncEvent } from '../../shared/schemas/sync.js';
import { fakeService, newTour, problem, type FakeAnswer, type FakeCall } from './fakes.js';

/** What the client sent, in order: each push as its events' types joined by `+`, any other call by its last path segment. */
const sentInOrder = (calls: { path: string; body?: unknown }[]) =>
  calls
    .filter((c) => c.path !== '/sync/changes')
    .map((c) =>
      c.path === '/sync/push' ? (c.body as { events: SyncEvent[] }).events.map((e) => e.type).join('+') : c.path.split('/').pop(),
    );

const dirs: string[] = [];
const clients: TourlineClient[] = [];
afterEach(async () => {
  vi.useRealTimers();
  while (clients.length) await clients.pop()!.close();
  while (dirs.length) await rm(dirs.pop()!, { recursive: true, force: true });
});

/** The fake service scripts every verdict: nothing is refused on the device (test/sdk/verdicts.test.ts covers that). */
async function open(options: Partial<TourlineClientOptions> & Pick<TourlineClientOptions, 'fetch'>) {
  const client = await TourlineClient.open({
    baseUrl: 'http://tourline.test',
    getToken: () => 'token',
    webSocket: null,
    checkLocally: false,
    ...options,
  });
  clients.push(client);
  return client;
}

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe('outbox durability', () => {
  it('stores an action durably before the call returns, so a restart finds it with its id', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tourline-outbox-'));
    dirs.push(dir);
    const service = fakeService();
    const tour = newTour();
    const first = await open({ fetch: service.fetch, storage: await FileStore.open(dir) });
    await first.state.putTour(tour);
    const { eventId } = await first.scan(tour.deliveries[0].positions[0].id);
    const { eventId: completionId } = await first.complete(tour.deliveries[1].id, {
      customerSignature: PNG,
      driverSignature: PNG,
      acknowledgements: { receiptConfirmed: true },
    });
    // The process dies here: nothing was sent, the store is not closed.
    const second = await open({ fetch: service.fetch, storage: await FileStore.open(dir) });
    expect(second.outbox.pending().map((e) => e.id)).toEqual([eventId, completionId]);
    expect(second.clientId).toBe(first.clientId);
    expect(second.view(tour.tour.id)!.deliveries[0].positions[0].scannedQuantity).toBe(1);
    expect(service.calls).toEqual([]);
  });

  it('keeps rejected events, the cursor and the local tours across a restart', async () => {
    const storage = new MemoryStore();
    const tour = newTour();
    const errors = [{ path: 'reason', message: 'must not be empty' }];
    const service = fakeService({
      result: (e) =>
        e.type === 'delivery.cancel'
          ? { status: 'rejected', code: 'invalid_state_transition', message: 'no', errors }
          : { status: 'applied' },
    });
    const first = await open({ fetch: service.fetch, storage });
    await first.state.putTour(tour);
    await first.cancelDelivery(tour.deliveries[0].id, 'closed');
    await first.sync();
    const second = await open({ fetch: service.fetch, storage });
    expect(second.rejected()).toMatchObject([
      { type: 'delivery.cancel', code: 'invalid_state_transition', message: 'no', errors, deliveryId: tour.deliveries[0].id },
    ]);
    expect(second.state.cursor).toBe('c1');
    expect(second.serverTour(tour.tour.id)).toEqual(tour);
  });
});

describe('a note the service gave another id', () => {
  it("is renamed in the pending events and in a pending completion's acknowledged notes", async () => {
    const outbox = await Outbox.load(new JsonStore(new MemoryStore()));
    const occurredAt = '2026-03-02T08:00:00.000Z';
    const update = await outbox.add(
      'e1',
      { kind: 'event', event: { type: 'note.update', eventId: 'e1', occurredAt, deliveryId: 'd', noteId: 'old', text: 'x' } },
      0,
    );
    const completion = await outbox.add(
      'e2',
      {
        kind: 'completion',
        deliveryId: 'd',
        occurredAt,
        customerSignature: '',
        driverSignature: '',
        acknowledgements: { receiptConfirmed: true, notesAcknowledged: true, acknowledgedNoteIds: ['other', 'old'], clientEventId: 'e2' },
      },
      0,
    );
    await outbox.renameNote('old', 'new');
    const [renamedUpdate, renamedCompletion] = [update, completion].map((e) => outbox.all().find((entry) => entry.id === e.id)!.action);
    expect(renamedUpdate).toMatchObject({ event: { noteId: 'new' } });
    expect(renamedCompletion).toMatchObject({ acknowledgements: { acknowledgedNoteIds: ['other', 'new'] } });
  });
});

describe('settling', () => {
  const hold = (n: number): SyncEvent => ({
    type: 'delivery.hold',
    eventId: `00000000-0000-4000-8000-00000000000${n}`,
    occurredAt: '2026-03-02T08:00:00.000Z',
    deliveryId: 'd',
    reason: 'x',
  });
  async function acknowledged(...entries: { seq?: number; generation: number }[]) {
    const outbox = await Outbox.load(new JsonStore(new MemoryStore()));
    for (const [i, { seq, generation }] of entries.entries()) {
      const entry = await outbox.add(hold(i).eventId, { kind: 'event', event: hold(i) }, 0);
      await outbox.acknowledge(entry, generation, seq);
    }
    return outbox;
  }

  it('lets an acknowledged entry go once the changes up to its seq are applied, not before', async () => {
    const outbox = await acknowledged({ seq: 7, generation: 1 }, { seq: 9, generation: 1 });
    expect(await outbox.settle({ lastSeq: 6 })).toBe(0);
    expect(await outbox.settle({ lastSeq: 7 })).toBe(1);
    expect(outbox.all().map((e) => e.ackSeq)).toEqual([9]);
    expect(await outbox.settle({ lastSeq: -1, generation: 2 })).toBe(1);
  });

  it('keeps an entry without a seq until a pull that started after its acknowledgement has caught up', async () => {
    const outbox = await acknowledged({ generation: 3 });
    expect(await outbox.settle({ lastSeq: 1_000_000 })).toBe(0);
    expect(await outbox.settle({ lastSeq: 0, generation: 3 })).toBe(0);
    expect(await outbox.settle({ lastSeq: 0, generation: 4 })).toBe(1);
  });

  it('lets acknowledged entries go after reading the tours again for a cursor the service no longer knows', async () => {
    const tour = newTour({ deliveries: 1 });
    const service = fakeService({
      intercept: (call) =>
        call.path === '/sync/changes'
          ? problem(400, 'validation', 'Unknown cursor')
          : call.path === `/tours/${tour.tour.id}`
            ? service.json(tour)
            : undefined,
    });
    const client = await open({ fetch: service.fetch });
    await client.state.putTour(tour);
    await client.state.setCursor('pruned');
    await client.holdDelivery(tour.deliveries[0].id, 'x');
    await client.sync();
    expect(client.outbox.all()).toEqual([]);
    expect(client.state.cursor).toBe('c0');
  });

  it.each([
    [7, 0],
    [6, 1],
  ])('lets go at start of an entry whose seq the stored copy holds (copy up to %i: %i left)', async (lastSeq, left) => {
    const storage = new MemoryStore();
    const tour = newTour({ deliveries: 1 });
    const service = fakeService({
      result: () => ({ status: 'applied', seq: 7 }),
      intercept: (call) => (call.path === '/sync/changes' ? 'network' : undefined),
    });
    const first = await open({ fetch: service.fetch, storage });
    await first.state.putTour(tour);
    await first.holdDelivery(tour.deliveries[0].id, 'x');
    await expect(first.sync()).rejects.toThrow(/fetch failed/);
    expect(first.outbox.all().map((e) => [e.state, e.ackSeq])).toEqual([['acknowledged', 7]]);
    await first.state.setCursor('c', lastSeq);
    await first.close();
    const second = await open({ fetch: service.fetch, storage });
    expect(second.outbox.all()).toHaveLength(left);
  });
});

describe('flushing', () => {
  it('sends at most 500 events per push and keeps their order', async () => {
    const service = fakeService();
    const client = await open({ fetch: service.fetch });
    const ids: string[] = [];
    const tour = newTour({ deliveries: 1, positions: 1 });
    await client.state.putTour(tour);
    for (let i = 0; i < 1100; i++) ids.push((await client.assignCar(tour.deliveries[0].id, null)).eventId);
    await client.sync();
    const sizes = service.pushes().map((c) => (c.body as { events: unknown[] }).events.length);
    expect(sizes).toEqual([500, 500, 100]);
    expect(service.pushes().flatMap((c) => (c.body as { events: SyncEvent[] }).events.map((e) => e.eventId))).toEqual(ids);
    expect(client.status().pendingCount).toBe(0);
  });

  it('queues actions in the order of the calls when the app does not await them, however long each write or photo takes', async () => {
    // A storage whose first writes are the slowest, as a busy phone's can be.
    class SlowFirstStore extends MemoryStore {
      private writes = 0;
      override async set(key: string, value: string) {
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, 30 - 10 * this.writes++)));
        return super.set(key, value);
      }
    }
    const tour = newTour({ deliveries: 1, positions: 1 });
    const d = tour.deliveries[0];
    const service = fakeService();
    const client = await open({ fetch: service.fetch, storage: new SlowFirstStore() });
    await client.state.putTour(tour);
    const photo = new Blob([PNG]);
    const calls = await Promise.all([
      client.holdDelivery(d.id, 'Tor zu'),
      client.createImageNote(d.id, { image: photo }),
      client.resumeDelivery(d.id),
      client.scan(d.positions[0].id),
    ]);
    expect(client.outbox.pending().map((e) => e.id)).toEqual(calls.map((c) => c.eventId));
    await client.sync();
    const order = sentInOrder(service.calls);
    expect(order).toEqual(['delivery.hold', 'image', 'delivery.resume+scan']);
  });

  it('moves a rejected event to the rejected list, reports it, and still sends the events of other deliveries', async () => {
    const tour = newTour();
    const [a, b] = tour.deliveries;
    const service = fakeService({
      result: (e) =>
        e.type === 'scan' && e.deliveryItemId === a.positions[0].id
          ? { status: 'rejected', code: 'quantity_exceeded', message: 'All 2 pieces are already scanned' }
          : { status: 'applied' },
    });
    const client = await open({ fetch: service.fetch });
    await client.state.putTour(tour);
    const reported: string[] = [];
    client.on('rejected', (r) => reported.push(`${r.type}:${r.code}:${r.message}`));
    await client.scan(a.positions[0].id);
    await client.scan(b.positions[0].id);
    await client.holdDelivery(a.id, 'customer absent');
    await client.sync();
    expect(reported).toEqual(['scan:quantity_exceeded:All 2 pieces are already scanned']);
    expect(client.status()).toMatchObject({ pendingCount: 0, rejected: [{ code: 'quantity_exceeded' }] });
    expect(service.pushes()).toHaveLength(1);
    // The rejected scan is gone from the view; the accepted hold waits there for the feed.
    const view = client.view(tour.tour.id)!;
    expect(view.deliveries[0].positions[0].scannedQuantity).toBe(0);
    await client.sync();
    expect(service.pushes()).toHaveLength(1);
  });

  it('takes the copy of a refused event, answered duplicate with the refusal after a lost answer, as refused', async () => {
    const tour = newTour({ deliveries: 1 });
    const service = fakeService({
      result: (e) =>
        e.type === 'delivery.cancel' ? { status: 'rejected', code: 'invalid_state_transition', message: 'no' } : { status: 'applied' },
      loseAnswer: (call) => call.path === '/sync/push' && service.pushes().length === 1,
    });
    const client = await open({ fetch: service.fetch });
    await client.state.putTour(tour);
    await client.cancelDelivery(tour.deliveries[0].id, 'closed');
    await client.scan(tour.deliveries[0].positions[0].id);
    await client.sync().catch(() => undefined);
    await client.sync();
    expect(service.pushes()).toHaveLength(2);
    expect(client.status()).toMatchObject({
      pendingCount: 0,
      rejected: [{ type: 'delivery.cancel', code: 'invalid_state_transition', message: 'no' }],
    });
  });

  it('halves a batch the service refuses as a whole until the one bad event is rejected alone', async () => {
    const tour = newTour({ deliveries: 1 });
    const d = tour.deliveries[0];
    const service = fakeService({
      intercept: (call) => {
        const events = (call.body as { events?: SyncEvent[] })?.events;
        return events?.some((e) => e.type === 'delivery.hold' && e.reason === 'x'.repeat(3000))
          ? problem(400, 'validation', 'The request is not valid')
          : undefined;
      },
    });
    const client = await open({ fetch: service.fetch });
    await client.state.putTour(tour);
    for (let i = 0; i < 5; i++) await client.scan(d.positions[0].id);
    await client.holdDelivery(d.id, 'x'.repeat(3000));
    await client.resumeDelivery(d.id);
    await client.sync();
    expect(client.rejected()).toMatchObject([{ type: 'delivery.hold', code: 'validation' }]);
    expect(client.status().pendingCount).toBe(0);
  });

  it('keeps sending other deliveries when one event makes the service fail with 500, and retries that one later', async () => {
    const tour = newTour({ deliveries: 3 });
    const [a, b, c] = tour.deliveries;
    let broken = true;
    const service = fakeService({
      intercept: (call) => {
        const events = (call.body as { events?: SyncEvent[] })?.events;
        return broken && events?.some((e) => e.type === 'delivery.hold' && e.deliveryId === a.id)
          ? problem(500, 'internal', 'An internal error occurred')
          : undefined;
      },
    });
    const client = await open({ fetch: service.fetch });
    await client.state.putTour(tour);
    await client.holdDelivery(a.id, 'x');
    await client.resumeDelivery(a.id);
    await client.holdDelivery(b.id, 'y');
    await client.holdDelivery(c.id, 'z');
    await expect(client.sync()).rejects.toThrow(/internal error/);
    expect(client.outbox.pending().map((e) => (e.action as { event: SyncEvent }).event.type)).toEqual(['delivery.hold', 'delivery.resume']);
    broken = false;
    await client.sync();
    expect(client.status()).toMatchObject({ pendingCount: 0, rejected: [] });
  });

  it('sends events of a delivery that follow its completion only after the completion, without holding up other deliveries', async () => {
    const tour = newTour();
    const [a, b] = tour.deliveries;
    const service = fakeService();
    const signedAt = '2026-03-02T08:00:00.000Z';
    const client = await open({ fetch: service.fetch, now: () => Date.parse(signedAt) });
    await client.state.putTour(tour);
    await client.scan(a.positions[0].id);
    const { eventId: completionId } = await client.complete(a.id, {
      customerSignature: PNG,
      driverSignature: PNG,
      acknowledgements: { receiptConfirmed: true },
    });
    await client.createNote(a.id, { text: 'after completion' });
    await client.scan(b.positions[0].id);
    await client.sync();
    const order = sentInOrder(service.calls);
    expect(order).toEqual(['scan+scan', 'complete', 'note.create']);
    const form = service.calls.find((c) => c.path.endsWith('/complete'))!.body as FormData;
    const acknowledgements = JSON.parse(form.get('acknowledgements') as string);
    // The time of the completion on the device goes along, however late it is sent.
    expect(acknowledgements).toEqual({ receiptConfirmed: true, clientEventId: completionId, occurredAt: signedAt });
    expect(new Uint8Array(await (form.get('customer_signature') as Blob).arrayBuffer())).toEqual(PNG);
  });

  it("sends another delivery's completion while a photo the service cannot store now waits for its retry", async () => {
    const tour = newTour();
    const [a, b] = tour.deliveries;
    const service = fakeService({
      intercept: (call) =>
        call.path.endsWith('/notes/image') ? problem(500, 'internal', 'Uploading the image to the document store failed') : undefined,
    });
    const client = await open({ fetch: service.fetch });
    await client.state.putTour(tour);
    const { eventId: photo } = await client.createImageNote(a.id, { image: PNG, contentType: 'image/png' });
    await client.complete(b.id, { customerSignature: PNG, driverSignature: PNG, acknowledgements: { receiptConfirmed: true } });
    await expect(client.sync()).rejects.toThrow(/document store/);
    expect(service.calls.filter((c) => c.path === `/deliveries/${b.id}/complete`)).toHaveLength(1);
    expect(client.outbox.pending().map((e) => e.id)).toEqual([photo]);
  });

  it.each([
    ["a proxy's 404 page for a push", '/sync/push', 404, 'text/html'],
    ["a captive portal's 200 login page for a completion", '/complete', 200, 'text/html'],
    ["a gateway's 200 JSON for a completion", '/complete', 200, 'application/json'],
    ["a gateway's 200 JSON for a push", '/sync/push', 200, 'application/json'],
  ])(
    "keeps the actions queued when %s answers in the service's place, and sends them once the service answers",
    async (_what, path, status, type) => {
      const tour = newTour({ deliveries: 1 });
      const d = tour.deliveries[0];
      let portal = true;
      const service = fakeService({
        intercept: (call) =>
          portal && call.path.endsWith(path)
            ? new Response(type === 'text/html' ? '<html>Please log in</html>' : '{"status":"unauthenticated"}', {
                status,
                headers: { 'content-type': type },
              })
            : undefined,
      });
      const client = await open({ fetch: service.fetch });
      await client.state.putTour(tour);
      await client.scan(d.positions[0].id);
      await client.complete(d.id, { customerSignature: PNG, driverSignature: PNG, acknowledgements: { receiptConfirmed: true } });
      await expect(client.sync()).rejects.toThrow();
      expect(client.status()).toMatchObject({ pendingCount: path === '/sync/push' ? 2 : 1, rejected: [] });
      portal = false;
      await client.sync();
      expect(client.status()).toMatchObject({ pendingCount: 0, rejected: [] });
      expect(service.calls.filter((c) => c.path.endsWith('/complete'))).toHaveLength(path === '/complete' ? 2 : 1);
    },
  );

  it('halves a batch that a proxy refuses as too large until the pieces pass, rejecting nothing', async () => {
    const tour = newTour({ deliveries: 2, positions: 1 });
    const proxyLimit = (call: FakeCall) =>
      ((call.body as { events?: unknown[] })?.events?.length ?? 0) > 4
        ? new Response('<html>413 Request Entity Too Large</html>', { status: 413, headers: { 'content-type': 'text/html' } })
        : undefined;
    const service = fakeService({ intercept: proxyLimit });
    const client = await open({ fetch: service.fetch });
    await client.state.putTour(tour);
    for (let i = 0; i < 10; i++) await client.assignCar(tour.deliveries[i % 2].id, null);
    await client.sync();
    expect(client.status()).toMatchObject({ pendingCount: 0, rejected: [] });
    const sent = service
      .pushes()
      .filter((c) => !proxyLimit(c))
      .flatMap((c) => (c.body as { events: SyncEvent[] }).events);
    expect(sent).toHaveLength(10);
  });

  it('stops a round when the service asks to slow down, and keeps its Retry-After for the pause', async () => {
    const tour = newTour();
    const [a, b] = tour.deliveries;
    const service = fakeService({
      intercept: (call) =>
        call.path === '/sync/push' ? problem(503, 'upstream_unavailable', 'busy', { 'retry-after': '120' }) : undefined,
    });
    const client = await open({ fetch: service.fetch });
    await client.state.putTour(tour);
    await client.holdDelivery(a.id, 'x');
    await client.complete(b.id, { customerSignature: PNG, driverSignature: PNG, acknowledgements: { receiptConfirmed: true } });
    const failure = await client.sync().catch((error: unknown) => error);
    expect(failure).toMatchObject({ status: 503, retryAfterMs: 120_000 });
    expect(service.calls.filter((c) => c.path.endsWith('/complete'))).toEqual([]);
  });

  it('reads the open amount for a payment after the calls before it, also when they are not awaited', async () => {
    const tour = newTour({ deliveries: 1, openAmountCents: 5000 });
    const d = tour.deliveries[0];
    const service = fakeService();
    const client = await open({ fetch: service.fetch });
    await client.state.putTour(tour);
    const [, payment] = await Promise.all([
      client.setCredit(d.id, { amountCents: 1000, reason: 'Bruch' }),
      client.recordPayment(d.id, { paymentMethodId: 'bar' }),
    ]);
    const event = client.outbox.get(payment.eventId)!.action as { event: { expectedAmountCents: number } };
    expect(event.event.expectedAmountCents).toBe(4000);
  });

  it('refuses an action whose photo cannot be read through its promise, and queues the next ones', async () => {
    const tour = newTour({ deliveries: 1 });
    const d = tour.deliveries[0];
    class SlowStore extends MemoryStore {
      override async set(key: string, value: string) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return super.set(key, value);
      }
    }
    const client = await open({ fetch: fakeService().fetch, storage: new SlowStore() });
    await client.state.putTour(tour);
    const unreadable = { arrayBuffer: () => Promise.reject(new Error('unreadable')) } as unknown as Blob;
    // The photo fails while the hold before it is still being written.
    const [before, photo, after] = await Promise.allSettled([
      client.holdDelivery(d.id, 'x'),
      client.createImageNote(d.id, { image: unreadable }),
      client.resumeDelivery(d.id),
    ]);
    expect([before.status, photo.status, after.status]).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(photo).toMatchObject({ reason: { message: 'unreadable' } });
    expect(client.outbox.pending().map((e) => e.action.kind === 'event' && e.action.event.type)).toEqual([
      'delivery.hold',
      'delivery.resume',
    ]);
  });

  it('keeps a tour when a proxy answers its read with a 404 page', async () => {
    const tour = newTour({ deliveries: 1 });
    const service = fakeService({
      intercept: (call) =>
        call.path.startsWith('/tours/')
          ? new Response('<html>Not Found</html>', { status: 404, headers: { 'content-type': 'text/html' } })
          : undefined,
    });
    const client = await open({ fetch: service.fetch });
    await client.state.putTour(tour);
    await expect(client.loadTour(tour.tour.id)).rejects.toMatchObject({ status: 404, fromService: false });
    expect(client.serverTour(tour.tour.id)).toEqual(tour);
  });

  it('finds its entries in the answer when the app makes its ids in upper case', async () => {
    const tour = newTour({ deliveries: 1 });
    const service = fakeService();
    const client = await open({ fetch: service.fetch, randomId: () => crypto.randomUUID().toUpperCase() });
    await client.state.putTour(tour);
    const { eventId } = await client.holdDelivery(tour.deliveries[0].id, 'x');
    expect(eventId).toBe(eventId.toLowerCase());
    await client.sync();
    expect(client.status()).toMatchObject({ pendingCount: 0, rejected: [] });
    expect(service.pushes()).toHaveLength(1);
  });

  it('asks for a fresh token after a 401 and repeats the request without losing its place', async () => {
    const tokens: boolean[] = [];
    const service = fakeService({
      intercept: (call) => (call.token === 'fresh' ? undefined : problem(401, 'unauthorized', 'Authentifizierung fehlgeschlagen')),
    });
    const client = await open({
      fetch: service.fetch,
      getToken: ({ forceRefresh }) => {
        tokens.push(forceRefresh);
        return forceRefresh ? 'fresh' : 'stale';
      },
    });
    const tour = newTour();
    await client.state.putTour(tour);
    await client.holdDelivery(tour.deliveries[0].id, 'later');
    await client.sync();
    expect(tokens).toEqual([false, true]);
    expect(service.pushes().map((c) => c.token)).toEqual(['stale', 'fresh']);
    expect(client.status()).toMatchObject({ pendingCount: 0, rejected: [] });
  });
});

describe('note images', () => {
  it("stores the upload's answer before sending the note's text, so a restart after a failure never uploads twice", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tourline-outbox-'));
    dirs.push(dir);
    const tour = newTour();
    const deliveryId = tour.deliveries[0].id;
    let pushFails = true;
    const service = fakeService({
      intercept: (call) => {
        if (call.path.endsWith('/notes/image')) {
          return service.json({
            note: { id: 'server-note', deliveryId, text: null, imageAttachment: '~sha256/abc', imageAttachmentId: 'att-1' },
          });
        }
        return call.path === '/sync/push' && pushFails ? 'network' : undefined;
      },
    });
    const first = await open({ fetch: service.fetch, storage: await FileStore.open(dir) });
    await first.state.putTour(tour);
    const { noteId } = await first.createImageNote(deliveryId, { image: PNG, contentType: 'image/png', text: 'Delle' });
    await first.deleteNote(deliveryId, noteId);
    await expect(first.sync()).rejects.toThrow(/fetch failed/);

    pushFails = false;
    const second = await open({ fetch: service.fetch, storage: await FileStore.open(dir) });
    await second.sync();
    expect(service.calls.filter((c) => c.path.endsWith('/notes/image'))).toHaveLength(1);
    const pushed = service
      .pushes()
      .filter((c) => c.token)
      .flatMap((c) => (c.body as { events: SyncEvent[] }).events);
    // The text follows the server's note id, and so does the later delete queued behind it.
    expect(pushed.map((e) => `${e.type}:${'noteId' in e ? e.noteId : ''}`)).toEqual([
      'note.update:server-note',
      'note.update:server-note',
      'note.delete:server-note',
    ]);
    expect(new Set(pushed.filter((e) => e.type === 'note.update').map((e) => e.eventId)).size).toBe(1);
    expect(second.status()).toMatchObject({ pendingCount: 0, rejected: [] });
  });

  it('lets a photo go with the change that deleted its note, so the note does not come back', async () => {
    const tour = newTour({ deliveries: 1 });
    const deliveryId = tour.deliveries[0].id;
    const service = fakeService({
      result: (e) => (e.type === 'note.delete' ? { status: 'applied', seq: 5 } : { status: 'applied' }),
      intercept: (call) =>
        call.path.endsWith('/notes/image')
          ? service.json({
              note: {
                id: (call.body as FormData).get('noteId'),
                deliveryId,
                text: null,
                imageAttachment: '~sha256/abc',
                imageAttachmentId: 'att-1',
              },
            })
          : call.path === '/sync/changes'
            ? 'network'
            : undefined,
    });
    const client = await open({ fetch: service.fetch });
    await client.state.putTour(tour);
    const { noteId } = await client.createImageNote(deliveryId, { image: PNG, contentType: 'image/png' });
    await client.sync().catch(() => undefined);
    await client.deleteNote(deliveryId, noteId);
    await client.sync().catch(() => undefined);
    expect(client.outbox.all().map((e) => [e.action.kind, e.state, e.ackSeq])).toEqual([
      ['noteImage', 'acknowledged', 5],
      ['event', 'acknowledged', 5],
    ]);
    expect(await client.outbox.settle({ lastSeq: 5 })).toBe(2);
  });

  it("does not send its text again over a repeat's answer that shows another device's later text", async () => {
    const tour = newTour({ deliveries: 1 });
    const deliveryId = tour.deliveries[0].id;
    const service = fakeService({
      intercept: (call) =>
        call.path.endsWith('/notes/image')
          ? service.json({
              note: {
                id: (call.body as FormData).get('noteId'),
                deliveryId,
                text: 'B hat korrigiert',
                imageAttachment: '~sha256/abc',
                imageAttachmentId: 'att-1',
              },
            })
          : undefined,
    });
    const client = await open({ fetch: service.fetch });
    await client.state.putTour(tour);
    await client.createImageNote(deliveryId, { image: PNG, contentType: 'image/png', text: 'A Foto' });
    await client.sync();
    expect(service.pushes()).toEqual([]);
    expect(client.status()).toMatchObject({ pendingCount: 0, rejected: [] });
  });

  it('takes a repeated upload whose note was deleted since as done, instead of retrying it forever', async () => {
    const tour = newTour({ deliveries: 1 });
    const service = fakeService({ intercept: (call) => (call.path.endsWith('/notes/image') ? service.json({ note: null }) : undefined) });
    const client = await open({ fetch: service.fetch });
    await client.state.putTour(tour);
    await client.createImageNote(tour.deliveries[0].id, { image: PNG, contentType: 'image/png', text: 'Delle' });
    await client.sync();
    expect(client.status()).toMatchObject({ pendingCount: 0, rejected: [] });
    expect(service.pushes()).toEqual([]);
  });
});

describe('retry timing', () => {
  async function failingClient(intercept: (call: FakeCall) => FakeAnswer) {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    vi.setSystemTime(new Date('2026-03-02T08:00:00Z'));
    const service = fakeService({ intercept });
    const client = await open({ fetch: service.fetch, random: Math.random });
    const tour = newTour();
    await client.state.putTour(tour);
    client.start({ live: false });
    await client.holdDelivery(tour.deliveries[0].id, 'later');
    return { service, client };
  }

  it('retries network failures with exponential backoff and jitter: first within 5 s, never more than 60 s apart', async () => {
    const { service, client } = await failingClient((call) => (call.path === '/sync/push' ? 'network' : undefined));
    await vi.advanceTimersByTimeAsync(15 * 60_000);
    const times = service.pushes().map((c) => c.at);
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    expect(gaps[0]).toBeGreaterThan(0);
    expect(gaps[0]).toBeLessThanOrEqual(5000);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(60_000);
    expect(gaps.slice(-3).every((g) => g >= 30_000)).toBe(true);
    expect(client.status()).toMatchObject({ pendingCount: 1, online: false, lastError: { code: 'network' } });
    expect(client.status().oldestPendingAgeMs).toBeGreaterThanOrEqual(15 * 60_000);
  });

  it.each([429, 503])('waits at least as long as Retry-After says on %i', async (status) => {
    let refused = 0;
    const { service, client } = await failingClient((call) =>
      call.path === '/sync/push' && refused++ === 0 ? problem(status, 'upstream_unavailable', 'busy', { 'retry-after': '30' }) : undefined,
    );
    await vi.advanceTimersByTimeAsync(29_000);
    expect(service.pushes()).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(service.pushes()).toHaveLength(2);
    expect(client.status()).toMatchObject({ pendingCount: 0, online: true, lastError: null });
  });

  it('sends what waited for the network as soon as the service answers again, not after the rest of its backoff', async () => {
    let down = true;
    const { service, client } = await failingClient(() => (down ? 'network' : undefined));
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    const tried = service.pushes().length;
    expect(client.status().nextRetryAt! - Date.now()).toBeGreaterThan(1000);
    down = false;
    await client.pull();
    await vi.advanceTimersByTimeAsync(50);
    expect(service.pushes().length).toBe(tried + 1);
    expect(client.status()).toMatchObject({ pendingCount: 0, online: true, nextRetryAt: null });
  });

  it('keeps the wait the service asked for when another request is answered meanwhile', async () => {
    let refused = 0;
    const { service, client } = await failingClient((call) =>
      call.path === '/sync/push' && refused++ === 0 ? problem(503, 'upstream_unavailable', 'busy', { 'retry-after': '30' }) : undefined,
    );
    await vi.advanceTimersByTimeAsync(1000);
    await client.pull();
    await vi.advanceTimersByTimeAsync(1000);
    expect(service.pushes()).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(29_000);
    expect(service.pushes()).toHaveLength(2);
  });

  it('makes no request and keeps no socket or polling while offline(), and starts again with online()', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const service = fakeService();
    const client = await open({ fetch: service.fetch, webSocket: null, pollIntervalMs: 1000 });
    const tour = newTour();
    await client.state.putTour(tour);
    client.start();
    await vi.advanceTimersByTimeAsync(2500);
    expect(service.calls.length).toBeGreaterThan(0);
    client.offline();
    await client.holdDelivery(tour.deliveries[0].id, 'later');
    const before = service.calls.length;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(service.calls.length).toBe(before);
    expect(client.status()).toMatchObject({ online: false, pendingCount: 1 });
    client.online();
    await vi.advanceTimersByTimeAsync(1500);
    expect(service.pushes()).toHaveLength(1);
    expect(service.calls.filter((c) => c.path === '/sync/changes').length).toBeGreaterThan(0);
    expect(client.status()).toMatchObject({ online: true, pendingCount: 0 });
  });

  it('retries a 500 answer and recovers once the service works again', async () => {
    let failures = 3;
    const { service, client } = await failingClient((call) =>
      call.path === '/sync/push' && failures-- > 0 ? problem(500, 'internal', 'boom') : undefined,
    );
    await vi.advanceTimersByTimeAsync(60_000);
    expect(service.pushes()).toHaveLength(4);
    expect(client.status()).toMatchObject({ pendingCount: 0, rejected: [], online: true });
    expect(client.status().lastSyncAt).toBeGreaterThan(Date.parse('2026-03-02T08:00:00Z'));
  });
});

describe('status', () => {
  it('is online only once the service has answered', async () => {
    const service = fakeService();
    const client = await open({ fetch: service.fetch });
    expect(client.status().online).toBe(false);
    await client.pull();
    expect(client.status().online).toBe(true);
  });

  it('tells subscribers the pending count, the age of the oldest pending action, and when it synced', async () => {
    let now = Date.parse('2026-03-02T08:00:00Z');
    const service = fakeService();
    const client = await open({ fetch: service.fetch, now: () => now });
    const seen: number[] = [];
    const unsubscribe = client.subscribe((s) => seen.push(s.pendingCount));
    const tour = newTour();
    await client.state.putTour(tour);
    await client.holdDelivery(tour.deliveries[0].id, 'a');
    now += 5000;
    await client.resumeDelivery(tour.deliveries[0].id);
    now += 1000;
    expect(client.status()).toMatchObject({ pendingCount: 2, oldestPendingAgeMs: 6000, lastSyncAt: null });
    await client.sync();
    expect(client.status()).toMatchObject({ pendingCount: 0, oldestPendingAgeMs: 0, lastSyncAt: now, online: true });
    unsubscribe();
    expect(seen.slice(0, 3)).toEqual([0, 1, 2]);
    expect(seen.at(-1)).toBe(0);
  });

  it('forgets the last error once the service answers a pull, unless a push waits for its retry', async () => {
    let offline = true;
    const service = fakeService({
      intercept: (call) => (offline ? 'network' : call.path === '/sync/push' ? problem(503, 'upstream_unavailable', 'busy') : undefined),
    });
    const client = await open({ fetch: service.fetch });
    const tour = newTour();
    await client.state.putTour(tour);
    await expect(client.sync()).rejects.toThrow(/fetch failed/);
    expect(client.status().lastError).toMatchObject({ code: 'network' });
    offline = false;
    await client.pull();
    expect(client.status()).toMatchObject({ online: true, lastError: null });

    await client.holdDelivery(tour.deliveries[0].id, 'a');
    client.start({ live: false });
    await vi.waitFor(() => expect(client.status().nextRetryAt).not.toBeNull());
    await client.pull();
    expect(client.status().lastError).toMatchObject({ status: 503 });
  });
});
