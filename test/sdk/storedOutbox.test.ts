import { describe, expect, it } from 'vitest';
import { MemoryStore, TourlineClient, type KeyValueStore, type KeyValueWrite } from '../../client-sdk/index.js';
import { fakeService, newTour } from './fakes.js';

/** A memory store that writes down every call that changes it. */
class RecordingStore extends MemoryStore {
  readonly writes: { op: 'set' | 'delete' | 'batch'; keys: string[] }[] = [];
  override async set(key: string, value: string) {
    this.writes.push({ op: 'set', keys: [key] });
    return super.set(key, value);
  }
  override async delete(key: string) {
    this.writes.push({ op: 'delete', keys: [key] });
    return super.delete(key);
  }
  override async batch(writes: KeyValueWrite[]) {
    this.writes.push({ op: 'batch', keys: writes.map((w) => w.key) });
    return super.batch(writes);
  }
}

const open = (storage: KeyValueStore, fetch = fakeService().fetch) =>
  TourlineClient.open({ baseUrl: 'http://tourline.test', getToken: () => 'token', fetch, webSocket: null, storage });

describe('the stored outbox', () => {
  it('records the answer of a push of many events in one batched write, and lets them go in another', async () => {
    const storage = new RecordingStore();
    const client = await open(storage);
    const tour = newTour({ deliveries: 10, positions: 5 });
    await client.state.putTour(tour);
    for (const delivery of tour.deliveries) for (const line of delivery.positions) await client.scan(line.id);
    storage.writes.length = 0;
    await client.sync();
    const outboxWrites = storage.writes.filter((w) => w.keys.some((k) => k.startsWith('outbox/')));
    // The acknowledgement's batch also keeps the actions for the window (acknowledged/).
    expect(outboxWrites.map((w) => [w.op, w.keys.filter((k) => k.startsWith('outbox/')).length])).toEqual([
      ['batch', 50],
      ['batch', 50],
    ]);
    expect(client.status().pendingCount).toBe(0);
    expect(await storage.keys('outbox/')).toEqual([]);
    await client.close();
  });

  it('sets an unreadable entry aside and reports it, and starts with the rest', async () => {
    const storage = new MemoryStore();
    const tour = newTour();
    const first = await open(storage);
    await first.state.putTour(tour);
    const { eventId } = await first.holdDelivery(tour.deliveries[0].id, 'zu');
    await first.close();
    await storage.set('outbox/000000000007-torn', '{"id":"torn","seq":7,"st');
    await storage.set('outbox/000000000008-odd', '{"id":"odd"}');
    await storage.set(`tour/${tour.tour.id}x`, '[1,2');

    const service = fakeService();
    const client = await open(storage, service.fetch);
    expect(client.status().setAside).toEqual([
      { key: 'outbox/000000000007-torn', reason: expect.stringMatching(/^not JSON/) },
      { key: 'outbox/000000000008-odd', reason: 'not the shape the SDK stores' },
      { key: `tour/${tour.tour.id}x`, reason: expect.stringMatching(/^not JSON/) },
    ]);
    expect(await storage.get('corrupt/outbox/000000000007-torn')).toBe('{"id":"torn","seq":7,"st');
    expect(await storage.keys('outbox/')).toHaveLength(1);
    expect(client.serverTour(tour.tour.id)).toEqual(tour);
    await client.sync();
    expect(service.pushes().flatMap((p) => (p.body as { events: { eventId: string }[] }).events.map((e) => e.eventId))).toEqual([eventId]);
    await client.close();
  });

  it('moves entries stored under the older key form (without the id) to the current one, keeping their order', async () => {
    const storage = new MemoryStore();
    const tour = newTour();
    const first = await open(storage);
    await first.state.putTour(tour);
    const ids = [
      (await first.holdDelivery(tour.deliveries[0].id, 'a')).eventId,
      (await first.resumeDelivery(tour.deliveries[0].id)).eventId,
    ];
    await first.close();
    // As an earlier version stored them: outbox/<seq>.
    for (const key of await storage.keys('outbox/')) {
      const value = (await storage.get(key))!;
      await storage.delete(key);
      await storage.set(key.replace(/-.*$/, ''), value);
    }

    const service = fakeService();
    const client = await open(storage, service.fetch);
    expect(await storage.keys('outbox/')).toEqual([`outbox/000000000001-${ids[0]}`, `outbox/000000000002-${ids[1]}`]);
    expect(client.outbox.pending().map((e) => e.id)).toEqual(ids);
    await client.sync();
    expect(service.pushes().flatMap((p) => (p.body as { events: { eventId: string }[] }).events.map((e) => e.eventId))).toEqual(ids);
    expect(await storage.keys('outbox/')).toEqual([]);
    await client.close();
  });
});
