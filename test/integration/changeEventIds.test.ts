import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';
import { completionForm } from '../helpers/uploads.js';
import { SyncSocket } from '../helpers/wsClient.js';

let nextAccount = 6700;
interface ChangeBody {
  seq: number;
  entity: string;
  id: string;
  eventIds?: string[];
}

const scan = (deliveryItemId: string, eventId = randomUUID()) => ({
  eventId,
  occurredAt: new Date().toISOString(),
  type: 'scan',
  deliveryItemId,
  action: 'scan',
});

describe.each(databaseKinds)('changes name the events that made them on %s', (kind) => {
  const api = useTestServer(kind);

  async function setup() {
    const accountId = nextAccount++;
    const token = await api.token(accountId);
    const tour = await newTour(api.db, {
      accountId,
      deliveries: 2,
      positions: [{ quantity: 10, scannedQuantity: 0, state: 'InProgress' }],
    });
    const cursor = (await api.get('/sync/cursor', { token })).body.cursor as string;
    return { accountId, token, tour, cursor };
  }
  const pull = async (token: string, since: string) => {
    const response = await api.get(`/sync/changes?since=${encodeURIComponent(since)}`, { token });
    expect(response.status).toBe(200);
    return response.body.changes as ChangeBody[];
  };

  it('names each applied event once, on the last change its write made for the delivery, and never a refused one', async () => {
    const { token, tour, cursor } = await setup();
    const [first, second] = tour.deliveries;
    const noteId = randomUUID();
    const events = [
      scan(first.items[0].id),
      scan(first.items[0].id),
      {
        eventId: randomUUID(),
        occurredAt: new Date().toISOString(),
        type: 'note.create',
        deliveryId: first.delivery.id,
        noteId,
        text: 'Hof',
      },
      scan(second.items[0].id),
      scan(randomUUID()),
    ];
    const pushed = await api.post('/sync/push', { clientId: 'phone', events }, { token });
    expect(pushed.status).toBe(200);
    const refused = pushed.body.results
      .filter((r: { status: string }) => r.status === 'rejected')
      .map((r: { eventId: string }) => r.eventId);
    expect(refused).toEqual([events[4].eventId]);

    const changes = await pull(token, cursor);
    const named = changes.filter((c) => c.eventIds);
    expect(named.flatMap((c) => c.eventIds)).toEqual(expect.arrayContaining(events.slice(0, 4).map((e) => e.eventId)));
    expect(named.flatMap((c) => c.eventIds)).toHaveLength(4);
    // Each delivery's events sit on the last of that delivery's changes: once a client applied it, it holds every effect.
    const lastOf = (ids: string[]) => {
      const carrier = named.find((c) => ids.every((id) => c.eventIds!.includes(id)))!;
      expect(carrier).toBeDefined();
      return carrier;
    };
    const firstCarrier = lastOf([events[0].eventId, events[1].eventId, events[2].eventId]);
    const secondCarrier = lastOf([events[3].eventId]);
    expect(changes.find((c) => c.entity === 'note' && c.id === noteId)!.seq).toBeLessThanOrEqual(firstCarrier.seq);
    expect(changes.find((c) => c.entity === 'position' && c.id === first.items[0].id)!.seq).toBeLessThanOrEqual(firstCarrier.seq);
    expect(changes.find((c) => c.entity === 'position' && c.id === second.items[0].id)!.seq).toBeLessThanOrEqual(secondCarrier.seq);

    // A resend answers duplicate and writes no change.
    const after = (await api.get('/sync/cursor', { token })).body.cursor as string;
    const again = await api.post('/sync/push', { clientId: 'phone', events: events.slice(0, 4) }, { token });
    expect(again.body.results.map((r: { status: string }) => r.status)).toEqual(['duplicate', 'duplicate', 'duplicate', 'duplicate']);
    expect(await pull(token, after)).toEqual([]);
  });

  it('names the events in the WebSocket message as in the pull answer', async () => {
    const { token, tour, cursor } = await setup();
    const socket = await SyncSocket.open(api.url, { token });
    try {
      socket.send({ type: 'resume', cursor });
      await socket.next((m) => m.type === 'changes');
      const event = scan(tour.deliveries[0].items[0].id);
      expect((await api.post('/sync/push', { clientId: 'phone', events: [event] }, { token })).status).toBe(200);
      const message = await socket.next(
        (m) => m.type === 'changes' && (m.changes ?? []).some((c: ChangeBody) => c.eventIds?.includes(event.eventId)),
      );
      expect((message.changes ?? []).filter((c: ChangeBody) => c.eventIds)).toHaveLength(1);
    } finally {
      await socket.close();
    }
  });

  it("names a completion's clientEventId on its completion change", async () => {
    const { token, tour, cursor } = await setup();
    const { delivery, items } = tour.deliveries[0];
    const scans = [scan(items[0].id)];
    for (let i = 1; i < 10; i++) scans.push(scan(items[0].id));
    expect((await api.post('/sync/push', { clientId: 'phone', events: scans }, { token })).status).toBe(200);
    const clientEventId = randomUUID();
    const completed = await api.post(
      `/deliveries/${delivery.id}/complete`,
      await completionForm({ acknowledgements: { receiptConfirmed: true, clientEventId } }),
      { token },
    );
    expect(completed.status).toBe(200);
    const changes = await pull(token, cursor);
    const completion = changes.find((c) => c.entity === 'completion')!;
    expect(completion.eventIds).toEqual([clientEventId]);
    // The completion's write: the completed delivery and the signatures come before the change that names it.
    const completedDelivery = changes.find(
      (c) => c.entity === 'delivery' && (c as { data?: { state?: string } }).data?.state === 'completed',
    )!;
    expect(completedDelivery.eventIds).toBeUndefined();
    expect(completion.seq).toBeGreaterThan(completedDelivery.seq);
  });

  it('names no event on changes that no client event made', async () => {
    const { token, cursor } = await setup();
    expect((await api.post('/me/cars', { plate: `E-${nextAccount}` }, { token })).status).toBe(200);
    const changes = await pull(token, cursor);
    expect(changes.length).toBeGreaterThan(0);
    expect(changes.every((c) => c.eventIds === undefined)).toBe(true);
  });
});
