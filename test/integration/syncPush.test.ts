import { randomUUID } from 'node:crypto';
import { eq, inArray } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { accounts, deliveries, deliveryItems, notes, processedEvents } from '../../server/db/schema.js';
import { databaseKinds } from '../helpers/databases.js';
import { newTour, type NewTourOptions } from '../helpers/factories.js';
import { expectProblem } from '../helpers/problems.js';
import { useTestServer } from '../helpers/server.js';
import { SyncSocket } from '../helpers/wsClient.js';
import { inProcess } from '../helpers/target.js';

let nextAccount = 7100;

describe.each(databaseKinds)('POST /sync/push on %s', (kind) => {
  const api = useTestServer(kind);

  /** A driver with one delivery: line 0 scannable with 2 pieces, none scanned; line 1 a service line. */
  async function setup(tourOptions: Pick<NewTourOptions, 'openAmountCents'> = {}) {
    const accountId = nextAccount++;
    const token = await api.token(accountId);
    const tour = await newTour(api.db, {
      ...tourOptions,
      accountId,
      positions: [
        { scannable: true, quantity: 2, scannedQuantity: 0, state: 'InProgress' },
        { scannable: false, quantity: 1 },
      ],
    });
    const { delivery, items } = tour.deliveries[0];
    return { accountId, token, tour, delivery, line: items[0], service: items[1] };
  }

  const at = () => new Date().toISOString();
  const scan = (deliveryItemId: string, action = 'scan') => ({
    eventId: randomUUID(),
    occurredAt: at(),
    type: 'scan',
    deliveryItemId,
    action,
  });
  const onDelivery = (deliveryId: string, type: string, extra: Record<string, unknown> = {}) => ({
    eventId: randomUUID(),
    occurredAt: at(),
    type,
    deliveryId,
    ...extra,
  });
  const push = (token: string, events: unknown[], clientId = 'phone-1') => api.post('/sync/push', { clientId, events }, { token });

  it('answers one result per event in request order: applied, duplicate or rejected with a code', async () => {
    const { token, delivery, line, service } = await setup();
    const first = scan(line.id);
    const events = [
      first,
      scan(line.id),
      scan(line.id) /* a third piece of two */,
      scan(service.id) /* not scannable */,
      { ...first },
      onDelivery(randomUUID(), 'delivery.hold', { reason: 'Kunde nicht da' }) /* unknown delivery */,
      onDelivery(delivery.id, 'delivery.hold', { reason: 'Kunde nicht da' }),
      onDelivery(delivery.id, 'delivery.hold', { reason: 'noch einmal' }) /* already held */,
    ];
    const response = await push(token, events);
    expect(response.status).toBe(200);
    const results = response.body.results as Array<{ eventId: string; status: string; code?: string; entity?: any }>;
    expect(results.map((r) => r.eventId)).toEqual(events.map((e) => e.eventId));
    expect(results.map((r) => r.status)).toEqual([
      'applied',
      'applied',
      'rejected',
      'rejected',
      'duplicate',
      'rejected',
      'applied',
      'rejected',
    ]);
    expect(results[1].entity).toMatchObject({ id: line.id, scannedQuantity: 2, state: 'Done' });
    expect(results[2].code).toBeTruthy();
    expect(results[5].code).toBe('not_found');
    expect(results[7].code).toBe('invalid_state_transition');

    const [item] = await api.db.select().from(deliveryItems).where(eq(deliveryItems.id, line.id));
    expect(item.scannedQuantity).toBe(2);
    const [row] = await api.db.select().from(deliveries).where(eq(deliveries.id, delivery.id));
    expect(row.state).toBe('held');
  });

  it('names the fields of a rejected event that broke a rule', async () => {
    const { token, delivery } = await setup();
    const response = await push(token, [
      onDelivery(delivery.id, 'credit', { action: 'set', amountCents: 1500, reason: ' ' }),
      onDelivery(delivery.id, 'delivery.assignCar', { carId: randomUUID() }),
    ]);
    expect(response.body.results).toMatchObject([
      { status: 'rejected', code: 'validation', errors: [{ path: 'amountCents' }, { path: 'reason' }] },
      { status: 'rejected', code: 'validation', errors: [{ path: 'carId', message: 'is not a car of your account' }] },
    ]);
  });

  it('refuses a hold without a reason on its own and applies the events around it', async () => {
    const { token, delivery, line } = await setup();
    const response = await push(token, [scan(line.id), onDelivery(delivery.id, 'delivery.hold', { reason: '  ' }), scan(line.id)]);
    expect(response.status).toBe(200);
    expect(response.body.results).toMatchObject([
      { status: 'applied' },
      { status: 'rejected', code: 'validation', errors: [{ path: 'reason' }] },
      { status: 'applied' },
    ]);
    const [row] = await api.db.select().from(deliveries).where(eq(deliveries.id, delivery.id));
    expect(row.state).toBe('active');
  });

  it('answers a resent batch with duplicate and the current state, applying nothing twice', async () => {
    const { token, line } = await setup();
    const events = [scan(line.id), scan(line.id), scan(line.id, 'unscan')];
    const first = await push(token, events);
    expect(first.body.results.map((r: { status: string }) => r.status)).toEqual(['applied', 'applied', 'applied']);
    const again = await push(token, events);
    expect(again.status).toBe(200);
    expect(again.body.results.map((r: { status: string }) => r.status)).toEqual(['duplicate', 'duplicate', 'duplicate']);
    expect(again.body.results[0].entity).toMatchObject({ id: line.id, scannedQuantity: 1 });
    const [item] = await api.db.select().from(deliveryItems).where(eq(deliveryItems.id, line.id));
    expect(item.scannedQuantity).toBe(1);
  });

  it("names for each applied event the seq up to which the sender's change feed carries it", async () => {
    const { token, delivery, line } = await setup();
    const cursor = (await api.get('/sync/cursor', { token })).body.cursor;
    const events = [
      scan(line.id),
      onDelivery(delivery.id, 'delivery.hold', { reason: '' }),
      onDelivery(delivery.id, 'delivery.assignCar', { carId: null }),
    ];
    const first = await push(token, events);
    expect(first.body.results.map((r: { status: string }) => r.status)).toEqual(['applied', 'rejected', 'applied']);
    const feed = (await api.get(`/sync/changes?since=${cursor}`, { token })).body.changes as { seq: number }[];
    const last = Math.max(...feed.map((c) => c.seq));
    expect(first.body.results.map((r: { seq?: number }) => r.seq)).toEqual([last, undefined, last]);
    // A copy changes nothing, so it names no seq.
    expect((await push(token, [events[0]])).body.results[0]).not.toHaveProperty('seq');
  });

  it("names a seq of the sender's own feed when pushes of several drivers are written together", async () => {
    const drivers = await Promise.all([setup(), setup(), setup()]);
    // Concurrent pushes share write transactions; each driver's seq must still be one of its own changes.
    const answers = await Promise.all(
      drivers.flatMap((driver) =>
        Array.from({ length: 8 }, () =>
          push(driver.token, [
            scan(driver.service.id) /* refused */,
            onDelivery(driver.delivery.id, 'note.create', { noteId: randomUUID(), text: 'Hof' }),
          ]),
        ),
      ),
    );
    for (const [index, driver] of drivers.entries()) {
      const feed = new Set(((await api.get('/sync/changes', { token: driver.token })).body.changes as { seq: number }[]).map((c) => c.seq));
      const seqs = answers.slice(index * 8, index * 8 + 8).map((answer) => answer.body.results[1].seq as number);
      expect(
        seqs.every((seq) => feed.has(seq)),
        `driver ${index}: ${seqs} within ${[...feed]}`,
      ).toBe(true);
    }
  });

  it("answers a resent batch's refused events as duplicates with their refusal, so that none applies out of order", async () => {
    const { token, delivery, line } = await setup();
    // Offline, the driver held the delivery twice (the second is refused), resumed it, scanned
    // one piece too many and took one back. The answer is lost; the phone pushes the batch again.
    const events = [
      onDelivery(delivery.id, 'delivery.hold', { reason: 'a' }),
      onDelivery(delivery.id, 'delivery.hold', { reason: 'b' }),
      onDelivery(delivery.id, 'delivery.resume'),
      scan(line.id),
      scan(line.id),
      scan(line.id),
      scan(line.id, 'unscan'),
    ];
    const first = await push(token, events);
    expect(first.body.results.map((r: { status: string }) => r.status)).toEqual([
      'applied',
      'rejected',
      'applied',
      'applied',
      'applied',
      'rejected',
      'applied',
    ]);
    const again = await push(token, events);
    expect(again.body.results.map((r: { status: string }) => r.status)).toEqual(Array(7).fill('duplicate'));
    // Each refused copy carries its first answer's code, reason and message, and the current state.
    for (const i of [1, 5]) {
      const { status: _, ...refusal } = first.body.results[i];
      expect(again.body.results[i]).toEqual({ ...refusal, status: 'duplicate', entity: expect.any(Object) });
    }
    expect(again.body.results[1]).toMatchObject({ code: 'invalid_state_transition', entity: { id: delivery.id, state: 'active' } });
    expect(again.body.results[5]).toMatchObject({
      code: 'quantity_exceeded',
      reason: 'quantity_exceeded',
      entity: { id: line.id, scannedQuantity: 1 },
    });
    // Only a refused copy carries a code: a copy of an applied event does not.
    expect(again.body.results[0]).not.toHaveProperty('code');
    // Two copies in one batch: both say why.
    const twice = await push(token, [events[1], { ...events[1] }]);
    expect(twice.body.results.map((r: { status: string; code?: string }) => [r.status, r.code])).toEqual([
      ['duplicate', 'invalid_state_transition'],
      ['duplicate', 'invalid_state_transition'],
    ]);
    const [row] = await api.db.select().from(deliveries).where(eq(deliveries.id, delivery.id));
    expect(row).toMatchObject({ state: 'active', stateReason: null });
    const [item] = await api.db.select().from(deliveryItems).where(eq(deliveryItems.id, line.id));
    expect(item.scannedQuantity).toBe(1);
    const recorded = await api.db.select().from(processedEvents).where(eq(processedEvents.eventId, events[1].eventId));
    expect(recorded[0].rejection).toMatchObject({ code: 'invalid_state_transition' });
  });

  it("keeps a refusal for the event's own fields too: a later copy under the same id, corrected or not, is a duplicate", async () => {
    const { token, delivery } = await setup();
    const credit = onDelivery(delivery.id, 'credit', { action: 'set', amountCents: 1500, reason: 'Bruch' });
    const first = (await push(token, [credit])).body.results[0];
    expect(first).toMatchObject({ status: 'rejected', errors: [{ path: 'amountCents' }] });
    expect((await push(token, [credit])).body.results[0]).toEqual({
      ...first,
      status: 'duplicate',
      entity: expect.objectContaining({ credit: null }),
    });
    const corrected = await push(token, [{ ...credit, amountCents: 2000 }]);
    expect(corrected.body.results[0]).toMatchObject({ status: 'duplicate', code: 'validation', entity: { credit: null } });
    const [row] = await api.db.select().from(deliveries).where(eq(deliveries.id, delivery.id));
    expect(row.creditAmountCents).toBeNull();
  });

  it('answers a copy within the batch with the state after the batch, not the state its first copy left', async () => {
    const { token, delivery, line } = await setup();
    const scanned = scan(line.id);
    const held = onDelivery(delivery.id, 'delivery.hold', { reason: 'Kunde nicht da' });
    const response = await push(token, [
      scanned,
      scan(line.id),
      { ...scanned },
      held,
      onDelivery(delivery.id, 'delivery.resume'),
      { ...held },
    ]);
    expect(response.body.results.map((r: { status: string }) => r.status)).toEqual([
      'applied',
      'applied',
      'duplicate',
      'applied',
      'applied',
      'duplicate',
    ]);
    expect(response.body.results[0].entity).toMatchObject({ scannedQuantity: 1 });
    expect(response.body.results[2].entity).toMatchObject({ id: line.id, scannedQuantity: 2, state: 'Done' });
    expect(response.body.results[3].entity).toMatchObject({ state: 'held' });
    expect(response.body.results[5].entity).toMatchObject({ id: delivery.id, state: 'active' });
    const [item] = await api.db.select().from(deliveryItems).where(eq(deliveryItems.id, line.id));
    expect(item.scannedQuantity).toBe(2);
  });

  it('answers a copy within the batch of a refused event as a duplicate with the refusal, refused for its fields or for the stored state', async () => {
    const { token, delivery } = await setup();
    const badCredit = onDelivery(delivery.id, 'credit', { action: 'set', amountCents: 1500, reason: 'Bruch' });
    const refusedHold = onDelivery(delivery.id, 'delivery.hold', { reason: 'b' });
    const response = await push(token, [
      badCredit,
      onDelivery(delivery.id, 'delivery.hold', { reason: 'a' }),
      refusedHold,
      { ...badCredit },
      { ...refusedHold },
    ]);
    expect(response.body.results.map((r: { status: string; code?: string }) => [r.status, r.code ?? null])).toEqual([
      ['rejected', 'validation'],
      ['applied', null],
      ['rejected', 'invalid_state_transition'],
      ['duplicate', 'validation'],
      ['duplicate', 'invalid_state_transition'],
    ]);
    expect(response.body.results[3]).toMatchObject({
      errors: [{ path: 'amountCents' }],
      entity: { credit: null, openAmountCents: expect.any(Number) },
    });
    expect(response.body.results[4]).toMatchObject({
      message: response.body.results[2].message,
      entity: { id: delivery.id, state: 'held', stateReason: 'a' },
    });
  });

  it('answers a copy within the batch that is another event under the same id as a duplicate naming other_event, applying nothing of it', async () => {
    const accountId = nextAccount++;
    const token = await api.token(accountId);
    const tour = await newTour(api.db, {
      accountId,
      deliveries: 3,
      positions: [
        { scannable: true, quantity: 5, scannedQuantity: 0, state: 'InProgress' },
        { scannable: false, quantity: 1 },
      ],
    });
    // No other event of the batch names the third delivery: nothing of it is read but for its copy.
    const [mine, other, untouched] = tour.deliveries;
    const [line, service] = mine.items;
    const scanned = scan(line.id);
    const held = onDelivery(other.delivery.id, 'delivery.hold', { reason: 'Kunde nicht da' });
    const refused = scan(service.id);
    const unknown = scan(randomUUID());
    const response = await push(token, [
      scanned,
      { ...onDelivery(mine.delivery.id, 'delivery.hold', { reason: 'anders' }), eventId: scanned.eventId } /* another kind */,
      { ...scan(other.items[0].id), eventId: scanned.eventId } /* another delivery's line */,
      held,
      { ...held, deliveryId: mine.delivery.id } /* another delivery */,
      refused,
      {
        ...onDelivery(mine.delivery.id, 'delivery.cancel', { reason: 'x' }),
        eventId: refused.eventId,
      } /* the copy of a refusal, but another event */,
      unknown,
      { ...scan(untouched.items[0].id), eventId: unknown.eventId } /* a line that exists, where the first names none */,
    ]);
    expect(response.status).toBe(200);
    const results = response.body.results as Array<{ status: string; reason?: string; code?: string; entity?: unknown }>;
    expect(results.map((r) => [r.status, r.reason ?? null])).toEqual([
      ['applied', null],
      ['duplicate', 'other_event'],
      ['duplicate', 'other_event'],
      ['applied', null],
      ['duplicate', 'other_event'],
      ['rejected', 'not_scannable'],
      ['duplicate', 'other_event'],
      ['rejected', 'not_found'],
      ['duplicate', 'other_event'],
    ]);
    for (const i of [1, 2, 4, 6, 8]) expect(results[i]).toMatchObject({ entity: null, message: expect.any(String) });
    for (const i of [1, 2, 4, 6, 8]) expect(results[i].code).toBeUndefined();
    const states = await api.db
      .select()
      .from(deliveries)
      .where(inArray(deliveries.id, [mine.delivery.id, other.delivery.id]));
    expect(Object.fromEntries(states.map((d) => [d.id, d.state]))).toEqual({ [mine.delivery.id]: 'active', [other.delivery.id]: 'held' });
    const lines = await api.db
      .select()
      .from(deliveryItems)
      .where(inArray(deliveryItems.id, [line.id, other.items[0].id, untouched.items[0].id]));
    expect(Object.fromEntries(lines.map((l) => [l.id, l.scannedQuantity]))).toEqual({
      [line.id]: 1,
      [other.items[0].id]: 0,
      [untouched.items[0].id]: 0,
    });
  });

  it('rejects a note.create whose noteId another delivery holds with conflict, and applies the events around it', async () => {
    const mine = await setup();
    const other = await setup();
    const takenId = randomUUID();
    const taken = onDelivery(other.delivery.id, 'note.create', { noteId: takenId, text: 'fremd' });
    expect((await push(other.token, [taken])).body.results[0].status).toBe('applied');
    const before = scan(mine.line.id);
    const after = onDelivery(mine.delivery.id, 'note.create', { noteId: randomUUID(), text: 'danach' });
    const response = await push(mine.token, [
      before,
      onDelivery(mine.delivery.id, 'note.create', { noteId: takenId, text: 'meins' }),
      after,
    ]);
    expect(response.status).toBe(200);
    expect(response.body.results.map((r: { status: string; code?: string }) => [r.status, r.code ?? null])).toEqual([
      ['applied', null],
      ['rejected', 'conflict'],
      ['applied', null],
    ]);
    const [note] = await api.db.select().from(notes).where(eq(notes.id, takenId));
    expect(note).toMatchObject({ deliveryId: other.delivery.id, text: 'fremd' });
    expect((await push(mine.token, [before])).body.results[0].status).toBe('duplicate');
  });

  it('applies a batch pushed twice at the same moment exactly once', async () => {
    const { token, line } = await setup();
    const events = [scan(line.id), scan(line.id)];
    const [a, b] = await Promise.all([push(token, events), push(token, events)]);
    const statuses = [...a.body.results, ...b.body.results].map((r: { status: string }) => r.status).sort();
    expect(statuses).toEqual(['applied', 'applied', 'duplicate', 'duplicate']);
    const [item] = await api.db.select().from(deliveryItems).where(eq(deliveryItems.id, line.id));
    expect(item.scannedQuantity).toBe(2);
  });

  it('answers the loser of one id sent at the same moment on two deliveries as a duplicate, never as refused', async () => {
    const accountId = nextAccount++;
    const token = await api.token(accountId);
    const tour = await newTour(api.db, {
      accountId,
      deliveries: 2,
      positions: [{ scannable: true, quantity: 20, scannedQuantity: 0, state: 'InProgress' }],
    });
    const [a, b] = tour.deliveries.map((d) => d.items[0].id);
    for (let round = 0; round < 5; round++) {
      const eventId = randomUUID();
      const answers = await Promise.all([push(token, [{ ...scan(a), eventId }]), push(token, [{ ...scan(b), eventId }])]);
      const results = answers.map((answer) => answer.body.results[0]);
      expect(results.map((r) => r.status).sort(), JSON.stringify(results)).toEqual(['applied', 'duplicate']);
      expect(results.find((r) => r.status === 'duplicate')).toMatchObject({ reason: 'other_event', entity: null });
    }
    const lines = await api.db
      .select()
      .from(deliveryItems)
      .where(inArray(deliveryItems.id, [a, b]));
    expect(lines.reduce((sum, line) => sum + line.scannedQuantity, 0)).toBe(5);
  });

  inProcess.it(
    'applies 500 events over several deliveries with a number of statements that does not grow with the events',
    async () => {
      const accountId = nextAccount++;
      const token = await api.token(accountId);
      const tour = await newTour(api.db, {
        accountId,
        deliveries: 5,
        positions: [{ scannable: true, quantity: 100, scannedQuantity: 0, state: 'InProgress' }],
      });
      const events = tour.deliveries.flatMap(({ items }) => Array.from({ length: 100 }, () => scan(items[0].id)));
      const { statements, result: response } = await api.statementsOf(() => push(token, events));
      expect(response.body.results.every((r: { status: string }) => r.status === 'applied')).toBe(true);
      expect(statements).toBeLessThan(100);
      const lines = await api.db
        .select()
        .from(deliveryItems)
        .where(
          inArray(
            deliveryItems.id,
            tour.deliveries.map((d) => d.items[0].id),
          ),
        );
      expect(lines.map((l) => l.scannedQuantity)).toEqual([100, 100, 100, 100, 100]);
    },
    60_000,
  );

  it('keeps the client id and the device time with each processed event', async () => {
    const { token, line } = await setup();
    const event = { ...scan(line.id), occurredAt: '2026-03-01T06:30:00.000Z' };
    await push(token, [event], 'tablet-42');
    const [row] = await api.db.select().from(processedEvents).where(eq(processedEvents.eventId, event.eventId));
    expect(row).toMatchObject({ clientId: 'tablet-42', type: 'scan' });
    expect(row.occurredAt?.toISOString()).toBe('2026-03-01T06:30:00.000Z');
  });

  it("rejects events on another driver's delivery as not found", async () => {
    const owner = await setup();
    const other = await setup();
    const response = await push(other.token, [scan(owner.line.id), onDelivery(owner.delivery.id, 'delivery.cancel', { reason: 'x' })]);
    expect(response.body.results.map((r: { status: string; code?: string }) => [r.status, r.code])).toEqual([
      ['rejected', 'not_found'],
      ['rejected', 'not_found'],
    ]);
  });

  it('publishes applied events to the change feed of the driver only, and live over the WebSocket', async () => {
    const { token, line } = await setup();
    const stranger = await setup();
    const cursor = (await api.get('/sync/cursor', { token })).body.cursor;
    const strangerCursor = (await api.get('/sync/cursor', { token: stranger.token })).body.cursor;
    const socket = await SyncSocket.open(api.url, { token });
    try {
      socket.send({ type: 'resume', cursor });
      await socket.next((m) => m.type === 'changes');
      await push(token, [scan(line.id)]);
      const live = await socket.next((m) => m.type === 'changes', 1);
      expect(live.changes).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ entity: 'position', id: line.id, data: expect.objectContaining({ scannedQuantity: 1 }) }),
        ]),
      );
      const pulled = await api.get(`/sync/changes?since=${cursor}`, { token });
      // Counting a piece leaves the delivery as it was: only the line is published.
      expect(pulled.body.changes.map((c: { id: string }) => c.id)).toEqual([line.id]);
      expect((await api.get(`/sync/changes?since=${strangerCursor}`, { token: stranger.token })).body.changes).toEqual([]);
    } finally {
      await socket.close();
    }
  });

  it('republishes the delivery with the line when an event changes its open amount', async () => {
    const { token, delivery, line } = await setup({ openAmountCents: 5000 });
    const cursor = (await api.get('/sync/cursor', { token })).body.cursor;
    const removal = scan(line.id, 'remove');
    expect((await push(token, [removal])).body.results[0].status).toBe('applied');
    const { changes } = (await api.get(`/sync/changes?since=${cursor}`, { token })).body;
    expect(changes.map((c: { entity: string; id: string }) => [c.entity, c.id])).toEqual([
      ['delivery', delivery.id],
      ['position', line.id],
    ]);
    // Two pieces of 10 € no longer delivered: 50 € become 30 €.
    expect(changes[0].data.openAmountCents).toBe(3000);
    expect(changes[1].eventIds).toEqual([removal.eventId]);
  });

  it("refuses a deactivated driver's pushes with 401 while pushes of other drivers written together with them apply", async () => {
    const drivers = await Promise.all([setup(), setup(), setup()]);
    const [gone] = drivers;
    await api.db.update(accounts).set({ active: false }).where(eq(accounts.personalnummer, gone.accountId));
    const pushes = drivers.flatMap((driver) =>
      Array.from({ length: 8 }, () => ({
        driver,
        event: onDelivery(driver.delivery.id, 'note.create', { noteId: randomUUID(), text: 'Hof' }),
      })),
    );
    const answers = await Promise.all(pushes.map(({ driver, event }) => push(driver.token, [event])));
    for (const [i, { driver }] of pushes.entries()) {
      if (driver === gone) expectProblem(answers[i], 401, 'unauthorized');
      else expect(answers[i].body.results[0].status, `push ${i}`).toBe('applied');
    }
    const recorded = await api.db
      .select()
      .from(processedEvents)
      .where(
        inArray(
          processedEvents.eventId,
          pushes.map((p) => p.event.eventId),
        ),
      );
    expect(recorded.map((r) => r.accountId).sort()).toEqual(
      pushes
        .slice(8)
        .map((p) => p.driver.accountId)
        .sort(),
    );
  });

  describe('refused requests (nothing is applied)', () => {
    it('refuses the whole batch with 400 naming the index of a malformed event', async () => {
      const { token, line } = await setup();
      const good = scan(line.id);
      const response = await push(token, [good, scan(line.id), { ...scan(line.id), deliveryItemId: 'not-a-uuid' }]);
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(response.body.code).toBe('validation');
      expect(response.body.errors.map((e: { path: string }) => e.path)).toContain('events.2.deliveryItemId');
      expect(await api.db.select().from(processedEvents).where(eq(processedEvents.eventId, good.eventId))).toEqual([]);
      const [item] = await api.db.select().from(deliveryItems).where(eq(deliveryItems.id, line.id));
      expect(item.scannedQuantity).toBe(0);
    });

    it.each([
      [
        'an unknown event type',
        (id: string) => [{ eventId: randomUUID(), occurredAt: at(), type: 'delivery.teleport', deliveryId: id }],
        'events.0',
      ],
      ['an event without eventId', (id: string) => [{ occurredAt: at(), type: 'delivery.resume', deliveryId: id }], 'events.0.eventId'],
      [
        'an event with a bad occurredAt',
        (id: string) => [{ eventId: randomUUID(), occurredAt: 'yesterday', type: 'delivery.resume', deliveryId: id }],
        'events.0.occurredAt',
      ],
      ['no events', () => [], 'events'],
    ])('refuses %s with 400', async (_what, events, path) => {
      const { token, delivery } = await setup();
      const response = await push(token, events(delivery.id));
      expect(response.status).toBe(400);
      expect(response.body.errors.map((e: { path: string }) => e.path).some((p: string) => p.startsWith(path))).toBe(true);
    });

    it('refuses more than 500 events with 400 and accepts exactly 500', async () => {
      const { token, delivery } = await setup();
      const many = (n: number) => Array.from({ length: n }, () => onDelivery(delivery.id, 'delivery.resume'));
      const tooMany = many(501);
      const refused = await push(token, tooMany);
      expect(refused.status).toBe(400);
      expect(
        await api.db
          .select()
          .from(processedEvents)
          .where(
            inArray(
              processedEvents.eventId,
              tooMany.slice(0, 5).map((e) => e.eventId),
            ),
          ),
      ).toEqual([]);
      const accepted = await push(token, many(500));
      expect(accepted.status).toBe(200);
      expect(accepted.body.results).toHaveLength(500);
    }, 60_000);

    it.each([
      [{ events: [] as unknown[] }, 'no clientId'],
      [{ clientId: '   ', events: [] as unknown[] }, 'an empty clientId'],
      [{ clientId: 'x'.repeat(201), events: [] as unknown[] }, 'a clientId over 200 characters'],
    ])('refuses %j (%s) with 400', async (body, _why) => {
      const { token, line } = await setup();
      const response = await api.post('/sync/push', { ...body, events: [scan(line.id)] }, { token });
      expect(response.status).toBe(400);
      expect(response.body.errors[0].path).toBe('clientId');
    });

    it('answers 401 to a deactivated account before looking at what it sent', async () => {
      const { accountId, token, line } = await setup();
      await api.db.update(accounts).set({ active: false }).where(eq(accounts.personalnummer, accountId));
      const good = scan(line.id);
      expectProblem(await push(token, [good]), 401, 'unauthorized');
      expectProblem(await push(token, [{ ...scan(line.id), deliveryItemId: 'not-a-uuid' }]), 401, 'unauthorized');
      expectProblem(await api.post('/sync/push', 'clientId=x', { token, headers: { 'content-type': 'text/plain' } }), 401, 'unauthorized');
      expect(await api.db.select().from(processedEvents).where(eq(processedEvents.eventId, good.eventId))).toEqual([]);
      const [item] = await api.db.select().from(deliveryItems).where(eq(deliveryItems.id, line.id));
      expect(item.scannedQuantity).toBe(0);
    });

    it('answers 401 without a token and 415 for a body that is not JSON', async () => {
      expect((await api.post('/sync/push', { clientId: 'x', events: [] })).status).toBe(401);
      const { token } = await setup();
      const response = await api.post('/sync/push', 'clientId=x', { token, headers: { 'content-type': 'text/plain' } });
      expect(response.status).toBe(415);
    });
  });
});
