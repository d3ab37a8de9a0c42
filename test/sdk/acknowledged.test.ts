import { describe, expect, it, vi } from 'vitest';
import { MemoryAttachmentStore, MemoryStore, TourlineClient, type TourlineClientOptions } from '../../client-sdk/index.js';
import type { SyncEvent } from '../../shared/schemas/sync.js';
import { fakeService, newTour, type FakeCall } from './fakes.js';

const HOUR = 3600 * 1000;
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The service's refusal of a cursor, as `GET /sync/changes` answers it. */
const refusedCursor = (message: string) =>
  new Response(
    JSON.stringify({
      type: 'x',
      title: 'Validation',
      status: 400,
      code: 'validation',
      detail: 'Resync',
      errors: [{ path: 'query.since', message }],
    }),
    { status: 400, headers: { 'content-type': 'application/problem+json' } },
  );

function setup(options: Partial<TourlineClientOptions> = {}) {
  let refusal: string | undefined;
  let down = false;
  const clock = { now: 1_000_000 };
  const service = fakeService({
    intercept: (call) => {
      if (down) return 'network';
      if (call.path !== '/sync/changes' || !refusal) return undefined;
      const message = refusal;
      refusal = undefined;
      return refusedCursor(message);
    },
  });
  const storage = new MemoryStore();
  const attachments = new MemoryAttachmentStore();
  const open = () =>
    TourlineClient.open({
      baseUrl: 'http://tourline.test',
      getToken: () => 'token',
      fetch: service.fetch,
      webSocket: null,
      storage,
      attachments,
      now: () => clock.now,
      backoff: { baseMs: 5, capMs: 20 },
      ...options,
    });
  return {
    service,
    attachments,
    clock,
    open,
    refuseCursor: (message: string) => (refusal = message),
    setDown: (value: boolean) => (down = value),
  };
}

const pushedIds = (calls: FakeCall[]) =>
  calls.filter((c) => c.path === '/sync/push').map((c) => (c.body as { events: SyncEvent[] }).events.map((e) => e.eventId));

async function actedAndSettled(client: TourlineClient) {
  const tour = newTour();
  await client.state.putTour(tour);
  const [d1, d2] = tour.deliveries;
  const ids = [
    (await client.scan(d1.positions[0].id)).eventId,
    (await client.holdDelivery(d2.id, 'Kunde nicht da')).eventId,
    (await client.resumeDelivery(d2.id)).eventId,
  ];
  await client.sync();
  expect(client.outbox.size).toBe(0);
  return { tour, ids };
}

/** A completion of a delivery without lines, with its signatures, sent and acknowledged. */
async function completedAndSent(client: TourlineClient) {
  const tour = newTour({ positions: 0 });
  const completion = await client.complete(tour.deliveries[0].id, {
    customerSignature: PNG,
    driverSignature: PNG,
    acknowledgements: { receiptConfirmed: true },
  });
  await client.sync();
  return completion;
}

describe('acknowledged actions kept for a window', () => {
  it.each(['cursor ahead of the change log', 'cursor from another database'])(
    'are sent again in their order, under their ids, before the resync, when the service answers %s',
    async (message) => {
      const { service, open, refuseCursor } = setup();
      const client = await open();
      const { ids } = await actedAndSettled(client);
      const before = service.calls.length;
      refuseCursor(message);
      await client.sync();

      const after = service.calls.slice(before);
      expect(pushedIds(after)).toEqual([ids]);
      const pushAt = after.findIndex((c) => c.path === '/sync/push');
      expect(after.findIndex((c) => c.path === '/sync/cursor')).toBeGreaterThan(pushAt);
      expect(client.outbox.size).toBe(0);
      expect(client.rejected()).toEqual([]);
      await client.close();
    },
  );

  it('are not sent again for an expired cursor, which only says the phone was away long', async () => {
    const { service, open, refuseCursor } = setup();
    const client = await open();
    await actedAndSettled(client);
    const before = service.calls.length;
    refuseCursor('cursor expired');
    await client.sync();
    expect(pushedIds(service.calls.slice(before))).toEqual([]);
    await client.close();
  });

  it('go again before what waited while the service was out of reach, so a delivery keeps its order', async () => {
    const { service, open, refuseCursor, setDown } = setup();
    const client = await open();
    const { tour, ids } = await actedAndSettled(client);
    setDown(true);
    refuseCursor('cursor ahead of the change log');
    client.start({ live: false });
    const waited = (await client.holdDelivery(tour.deliveries[1].id, 'Tor zu')).eventId;
    await vi.waitFor(() => expect(client.status().lastError).not.toBeNull());
    const before = service.calls.length;
    setDown(false);
    client.online();
    await vi.waitFor(() => expect(client.outbox.size).toBe(0));
    expect(pushedIds(service.calls.slice(before)).flat()).toEqual([...ids, waited]);
    await client.close();
  });

  it('survive an app restart, and actions queued after it come after them', async () => {
    const { service, open, refuseCursor } = setup();
    const first = await open();
    const { tour, ids } = await actedAndSettled(first);
    await first.close();
    const second = await open();
    await second.state.putTour(tour);
    const later = (await second.holdDelivery(tour.deliveries[1].id, 'Tor zu')).eventId;
    expect(second.outbox.pending().map((e) => e.id)).toEqual([later]);
    refuseCursor('cursor ahead of the change log');
    // The hold goes; the pull is refused; everything kept goes again, the hold after what came before it.
    await second.sync();
    expect(second.outbox.size).toBe(0);
    expect(pushedIds(service.calls).slice(-2)).toEqual([[later], [...ids, later]]);
    await second.close();
  });

  it('keep a completion with its signatures, and let both go when the window has passed', async () => {
    const { attachments, clock, open, refuseCursor, service } = setup({ keepAcknowledged: { forMs: 10 * HOUR } });
    const client = await open();
    const completion = await completedAndSent(client);
    expect(client.outbox.size).toBe(0);
    expect(await attachments.get(`${completion.eventId}.customer`)).toEqual(PNG);

    refuseCursor('cursor ahead of the change log');
    const before = service.calls.length;
    await client.sync();
    expect(service.calls.slice(before).filter((c) => c.path.endsWith('/complete'))).toHaveLength(1);

    clock.now += 11 * HOUR;
    await client.close();
    const reopened = await open();
    expect(await attachments.get(`${completion.eventId}.customer`)).toBeUndefined();
    refuseCursor('cursor ahead of the change log');
    const again = service.calls.length;
    await reopened.sync();
    expect(service.calls.slice(again).filter((c) => c.path.endsWith('/complete') || c.path === '/sync/push')).toEqual([]);
    await reopened.close();
  });

  it('keep only the newest within the bytes, photos counted', async () => {
    const { attachments, open } = setup({ keepAcknowledged: { maxBytes: 5000 } });
    const client = await open();
    const tour = newTour();
    await client.state.putTour(tour);
    const photos = [];
    for (let i = 0; i < 3; i++) {
      photos.push(await client.createImageNote(tour.deliveries[0].id, { image: new Uint8Array(2000).fill(i), contentType: 'image/jpeg' }));
      await client.sync();
    }
    const kept = await Promise.all(photos.map(async (p) => (await attachments.get(p.eventId)) !== undefined));
    expect(kept).toEqual([false, true, true]);
    await client.close();
  });

  it('are not kept with keepAcknowledged: null, and their signatures go once sent', async () => {
    const { attachments, open, refuseCursor, service } = setup({ keepAcknowledged: null });
    const client = await open();
    const completion = await completedAndSent(client);
    expect(await attachments.get(`${completion.eventId}.customer`)).toBeUndefined();
    refuseCursor('cursor ahead of the change log');
    const before = service.calls.length;
    await client.sync();
    expect(service.calls.slice(before).filter((c) => c.path.endsWith('/complete'))).toEqual([]);
    await client.close();
  });
});
