import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MemoryStore, TourlineClient } from '../../client-sdk/index.js';
import { SDK_VERSION } from '../../client-sdk/version.js';
import { fakeService, newTour, problem } from './fakes.js';

const open = (fetch: (input: string, init: RequestInit) => Promise<Response>, storage = new MemoryStore()) =>
  TourlineClient.open({ baseUrl: 'http://tourline.test', getToken: () => 'token', fetch, webSocket: null, storage });

const tooOld = () =>
  new Response(
    JSON.stringify({ type: 'x', title: 'Client too old', status: 426, detail: 'update', code: 'client_too_old', minimumVersion: '0.3.0' }),
    { status: 426, headers: { 'content-type': 'application/problem+json' } },
  );

describe('the release the SDK names', () => {
  it('is the version of both package.json files', () => {
    for (const file of ['package.json', 'client-sdk/package.json'])
      expect(JSON.parse(readFileSync(file, 'utf8')).version, file).toBe(SDK_VERSION);
  });

  it('goes with every request as Tourline-Client, with the protocol', async () => {
    const headers: string[] = [];
    const service = fakeService();
    const client = await open(async (input, init) => {
      headers.push((init.headers as Record<string, string>)['tourline-client']);
      return service.fetch(input, init);
    });
    await client.enqueue({ type: 'delivery.hold', deliveryId: newTour().deliveries[0].id, reason: 'x' });
    await client.sync();
    expect(headers.length).toBeGreaterThan(1);
    expect(new Set(headers)).toEqual(new Set([`@tourline/client/${SDK_VERSION}; protocol=1`]));
    await client.close();
  });
});

describe('an SDK older than the service serves', () => {
  it('keeps every action queued, shows needsUpdate and sends nothing more', async () => {
    let refused = true;
    const service = fakeService({ intercept: () => (refused ? tooOld() : undefined) });
    const client = await open(service.fetch);
    const tour = newTour({ deliveries: 3, positions: 0 });
    await client.state.putTour(tour);
    await client.holdDelivery(tour.deliveries[1].id, 'zu');
    await client.holdDelivery(tour.deliveries[2].id, 'auch');
    await client.complete(tour.deliveries[0].id, {
      customerSignature: new Uint8Array([1]),
      driverSignature: new Uint8Array([2]),
      acknowledgements: { receiptConfirmed: true },
    });
    client.start({ live: false });
    await expect.poll(() => client.status().needsUpdate).toBe(true);
    const calls = service.calls.length;
    expect(client.status()).toMatchObject({
      pendingCount: 3,
      rejected: [],
      minimumVersion: '0.3.0',
      lastError: { code: 'client_too_old' },
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(service.calls.length).toBe(calls);
    refused = false;
    client.resume();
    await client.settled(5000);
    expect(client.status()).toMatchObject({ needsUpdate: false, pendingCount: 0, rejected: [] });
    await client.close();
  });

  it('sends, once updated, the actions an older release marked refused as too old', async () => {
    const storage = new MemoryStore();
    const service = fakeService({
      intercept: (call) => (call.path === '/sync/push' ? problem(426, 'client_too_old', 'update') : undefined),
    });
    const old = await open(service.fetch, storage);
    const hold = await old.enqueue({ type: 'delivery.hold', deliveryId: newTour().deliveries[0].id, reason: 'x' });
    const other = await old.enqueue({ type: 'delivery.hold', deliveryId: newTour().deliveries[0].id, reason: 'y' });
    // As 0.1.0 stored a 426 it knew nothing of, and one refusal of another kind.
    await old.outbox.reject(old.outbox.get(hold.eventId)!, { code: 'client_too_old', message: 'update' }, 1);
    await old.outbox.reject(old.outbox.get(other.eventId)!, { code: 'validation', message: 'no' }, 1);
    await old.close();
    const served = fakeService();
    const updated = await open(served.fetch, storage);
    expect(updated.status()).toMatchObject({ pendingCount: 1, rejected: [{ id: other.eventId }] });
    await updated.sync();
    expect(served.pushes().flatMap((c) => (c.body as { events: { eventId: string }[] }).events.map((e) => e.eventId))).toEqual([
      hold.eventId,
    ]);
    await updated.close();
  });
});
