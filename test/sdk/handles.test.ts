import { describe, expect, it } from 'vitest';
import { MemoryStore, TourlineClient } from '../../client-sdk/index.js';
import { fakeService, newTour, problem } from './fakes.js';

const open = (fetch: ReturnType<typeof fakeService>['fetch'], storage = new MemoryStore()) =>
  TourlineClient.open({ baseUrl: 'http://tourline.test', getToken: () => 'token', fetch, webSocket: null, storage });

describe('action handles and sign-in', () => {
  it("settles each action's outcome when the service applied or refused it", async () => {
    const service = fakeService({
      result: (e) =>
        e.type === 'delivery.cancel' ? { status: 'rejected', code: 'invalid_state_transition', message: 'no' } : { status: 'applied' },
    });
    const client = await open(service.fetch);
    const tour = newTour();
    await client.state.putTour(tour);
    const hold = await client.holdDelivery(tour.deliveries[0].id, 'zu');
    const cancel = await client.cancelDelivery(tour.deliveries[1].id, 'weg');
    await client.sync();
    expect(await hold.outcome).toEqual({ status: 'applied' });
    expect(await cancel.outcome).toMatchObject({ status: 'rejected', rejection: { id: cancel.eventId, code: 'invalid_state_transition' } });
    await client.close();
  });

  it('needs sign-in when a refreshed token still gets 401, and sends nothing more until resume()', async () => {
    let refused = true;
    const service = fakeService({ intercept: () => (refused ? problem(401, 'unauthorized', 'token rejected') : undefined) });
    const client = await open(service.fetch);
    await client.enqueue({ type: 'delivery.hold', deliveryId: newTour().deliveries[0].id, reason: 'x' });
    await expect(client.sync()).rejects.toThrow();
    expect(client.status().needsSignIn).toBe(true);
    refused = false;
    client.resume();
    await client.sync();
    expect(client.status()).toMatchObject({ needsSignIn: false, pendingCount: 0 });
    await client.close();
  });

  it('keeps the actions of two clients on one storage apart (two tabs)', async () => {
    const storage = new MemoryStore();
    const service = fakeService();
    const [a, b] = [await open(service.fetch, storage), await open(service.fetch, storage)];
    const first = await a.enqueue({ type: 'delivery.hold', deliveryId: newTour().deliveries[0].id, reason: 'a' });
    const second = await b.enqueue({ type: 'delivery.hold', deliveryId: newTour().deliveries[0].id, reason: 'b' });
    const reopened = await open(service.fetch, storage);
    expect(
      reopened.outbox
        .pending()
        .map((e) => e.id)
        .sort(),
    ).toEqual([first.eventId, second.eventId].sort());
  });
});
