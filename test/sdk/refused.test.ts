import { describe, expect, it } from 'vitest';
import { MemoryAttachmentStore, MemoryStore, TourlineClient } from '../../client-sdk/index.js';
import { fakeService, newTour, problem, type FakeCall } from './fakes.js';

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The fake service refuses what the tests want refused: nothing is refused on the device. */
function open(fetch: ReturnType<typeof fakeService>['fetch'], attachments = new MemoryAttachmentStore()) {
  return TourlineClient.open({
    baseUrl: 'http://tourline.test',
    getToken: () => 'token',
    fetch,
    webSocket: null,
    checkLocally: false,
    storage: new MemoryStore(),
    attachments,
    // Without the window of acknowledged actions, which would keep the signatures after they were sent.
    keepAcknowledged: null,
  });
}

/** A completion the service refused, its signatures still in the attachment store. */
async function refusedCompletion(service: ReturnType<typeof fakeService>) {
  const attachments = new MemoryAttachmentStore();
  const client = await open(service.fetch, attachments);
  const tour = newTour();
  await client.state.putTour(tour);
  const completion = await client.complete(tour.deliveries[0].id, {
    customerSignature: PNG,
    driverSignature: PNG,
    acknowledgements: { receiptConfirmed: true },
  });
  await client.sync();
  return { client, attachments, completion };
}

const pushed = (calls: FakeCall[]) =>
  calls.filter((c) => c.path === '/sync/push').flatMap((c) => (c.body as { events: { eventId: string; reason?: string }[] }).events);

describe('refused actions', () => {
  it('are queued again with changes as new actions, whose handles settle, and the refused one goes', async () => {
    const service = fakeService({
      result: (e) =>
        e.type === 'delivery.hold' && !e.reason.trim()
          ? { status: 'rejected', code: 'validation', message: 'reason required' }
          : { status: 'applied' },
    });
    const client = await open(service.fetch);
    const tour = newTour();
    await client.state.putTour(tour);
    const hold = await client.holdDelivery(tour.deliveries[0].id, '  ');
    await client.sync();
    expect(await hold.outcome).toMatchObject({ status: 'rejected', rejection: { code: 'validation' } });

    const retried = await client.retryRejected(hold.eventId, { reason: 'Kunde nicht da' });
    expect(retried.eventId).not.toBe(hold.eventId);
    expect(client.rejected()).toEqual([]);
    expect(client.delivery(tour.deliveries[0].id)!.state).toBe('held');
    await client.sync();
    expect(await retried.outcome).toEqual({ status: 'applied' });
    expect(pushed(service.calls).map((e) => [e.eventId, e.reason])).toEqual([
      [hold.eventId, '  '],
      [retried.eventId, 'Kunde nicht da'],
    ]);
    expect(() => client.retryRejected(hold.eventId)).toThrow(/no refused action/);
    await client.close();
  });

  it('retries a refused completion with other acknowledgements, sending the stored signatures again, then deleting them', async () => {
    let refuse = true;
    const service = fakeService({
      intercept: (call) =>
        call.path.endsWith('/complete') && refuse
          ? ((refuse = false), problem(422, 'completion_incomplete', 'notes not acknowledged'))
          : undefined,
    });
    const { client, attachments, completion } = await refusedCompletion(service);
    expect(client.rejected()).toMatchObject([{ id: completion.eventId, code: 'completion_incomplete' }]);

    const retried = await client.retryRejected(completion.eventId, { acknowledgements: { notesAcknowledged: true } });
    await client.sync();
    expect(await retried.outcome).toEqual({ status: 'applied' });
    const sent = service.calls
      .filter((c) => c.path.endsWith('/complete'))
      .map((c) => JSON.parse(String((c.body as FormData).get('acknowledgements'))));
    expect(sent).toMatchObject([
      { clientEventId: completion.eventId },
      { clientEventId: retried.eventId, notesAcknowledged: true, receiptConfirmed: true },
    ]);
    expect(await attachments.get(`${completion.eventId}.customer`)).toBeUndefined();
    expect(client.outbox.size).toBe(0);
    await client.close();
  });

  it('are dismissed with their photos', async () => {
    const service = fakeService({
      intercept: (call) => (call.path.endsWith('/complete') ? problem(409, 'invalid_state_transition', 'cancelled') : undefined),
    });
    const { client, attachments, completion } = await refusedCompletion(service);
    expect(await attachments.get(`${completion.eventId}.driver`)).toBeDefined();
    await client.dismissRejected(completion.eventId);
    expect(client.rejected()).toEqual([]);
    expect([await attachments.get(`${completion.eventId}.customer`), await attachments.get(`${completion.eventId}.driver`)]).toEqual([
      undefined,
      undefined,
    ]);
    await client.close();
  });
});

describe('old tours', () => {
  it('are forgotten once nothing of them waits, and a later change of one does not bring it back; loadTour does', async () => {
    const tour = newTour();
    const storage = new MemoryStore();
    // Every pull brings a newer change of the tour (an office edit of its name, say).
    let seq = 0;
    const change = () => ({ seq: ++seq, entity: 'tour', op: 'upsert', id: tour.tour.id, tourId: tour.tour.id, data: tour.tour });
    const service = fakeService({
      intercept: (call) => {
        if (call.path === '/sync/changes')
          return new Response(JSON.stringify({ changes: [change()], cursor: `c${seq}`, hasMore: false }), {
            headers: { 'content-type': 'application/json' },
          });
        if (call.path === `/tours/${tour.tour.id}`)
          return new Response(JSON.stringify(tour), { headers: { 'content-type': 'application/json' } });
        return undefined;
      },
    });
    const client = await TourlineClient.open({
      baseUrl: 'http://tourline.test',
      getToken: () => 'token',
      fetch: service.fetch,
      webSocket: null,
      storage,
    });
    await client.state.putTour(tour);
    await client.scan(tour.deliveries[0].positions[0].id);
    await expect(client.forgetTour(tour.tour.id)).rejects.toThrow(/still has actions/);
    await client.sync();
    await client.forgetTour(tour.tour.id);
    expect(client.tourIds()).toEqual([]);
    const reads = service.calls.filter((c) => c.path.startsWith('/tours/')).length;
    await client.pull();
    expect(client.tourIds()).toEqual([]);
    expect(service.calls.filter((c) => c.path.startsWith('/tours/'))).toHaveLength(reads);
    await client.close();

    const reopened = await TourlineClient.open({
      baseUrl: 'http://tourline.test',
      getToken: () => 'token',
      fetch: service.fetch,
      webSocket: null,
      storage,
    });
    expect(reopened.tourIds()).toEqual([]);
    await reopened.loadTour(tour.tour.id);
    expect(reopened.tourIds()).toEqual([tour.tour.id]);
    await reopened.close();
  });
});
