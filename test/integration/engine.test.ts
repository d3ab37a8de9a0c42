import { randomUUID } from 'node:crypto';
import { eq, inArray } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { SyncEvent } from '../../shared/schemas/sync.js';
import type { DriverActor } from '../../server/context.js';
import { attachments, deliveries, deliveryItems, notes, processedEvents, scanAudit } from '../../server/db/schema.js';
import { applyEvents, type WriteTiming } from '../../server/engine/apply.js';
import { databaseKinds } from '../helpers/databases.js';
import { driverActor, newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';
import { inProcess } from '../helpers/target.js';

let nextAccount = 3500;

describe.each(databaseKinds)('event engine on %s', (kind) => {
  const api = useTestServer(kind);

  async function setup(quantity = 50) {
    const accountId = nextAccount++;
    const token = await api.token(accountId);
    const tour = await newTour(api.db, {
      accountId,
      deliveries: 2,
      positions: [
        { scannable: true, quantity, scannedQuantity: 0, state: 'InProgress' },
        { scannable: true, quantity: 2, scannedQuantity: 0, state: 'InProgress' },
      ],
    });
    const actor = driverActor(accountId);
    return { token, actor, tour, line: tour.deliveries[0].items[0], other: tour.deliveries[1].items[0] };
  }

  const now = () => new Date().toISOString();
  const scanEvent = (deliveryItemId: string, action = 'scan', eventId = randomUUID()): SyncEvent =>
    ({ type: 'scan', eventId, occurredAt: now(), deliveryItemId, action }) as SyncEvent;

  it('applies ten copies of one event sent at the same moment exactly once', async () => {
    const { token, line } = await setup();
    const clientScanId = randomUUID();
    const body = { scans: [{ clientScanId, deliveryItemId: line.id, action: 'scan', occurredAt: now() }] };
    const responses = await Promise.all(Array.from({ length: 10 }, () => api.post('/scans', body, { token })));
    const statuses = responses.map((r) => r.body.results[0].status).sort();
    expect(statuses.filter((s) => s === 'applied')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'duplicate')).toHaveLength(9);
    expect(await api.db.select().from(scanAudit).where(eq(scanAudit.clientScanId, clientScanId))).toHaveLength(1);
    const [item] = await api.db.select().from(deliveryItems).where(eq(deliveryItems.id, line.id));
    expect(item.scannedQuantity).toBe(1);
  });

  it('loses no update when 50 different scans of one line arrive concurrently', async () => {
    const { token, line } = await setup(50);
    const responses = await Promise.all(
      Array.from({ length: 50 }, () =>
        api.post(
          '/scans',
          { scans: [{ clientScanId: randomUUID(), deliveryItemId: line.id, action: 'scan', occurredAt: now() }] },
          { token },
        ),
      ),
    );
    expect(responses.every((r) => r.body.results[0].status === 'applied')).toBe(true);
    const [item] = await api.db.select().from(deliveryItems).where(eq(deliveryItems.id, line.id));
    expect(item).toMatchObject({ scannedQuantity: 50, state: 'Done' });
    expect(await api.db.select().from(scanAudit).where(eq(scanAudit.deliveryItemId, line.id))).toHaveLength(50);
  });

  it('tells each request how long it waited for the writer and how long the run that wrote it took', async () => {
    const { actor, line, other } = await setup();
    const timings: WriteTiming[] = [];
    const onWrite = (timing: WriteTiming) => timings.push(timing);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => applyEvents(api.db, actor, [scanEvent(i % 2 ? line.id : other.id)], { onWrite })),
    );
    expect(results.flat().map((r) => r.status)).toEqual(Array(6).fill('applied'));
    expect(timings).toHaveLength(6);
    // The first request starts a run of its own; the five queued behind it go together in the next.
    const [first, ...rest] = timings;
    expect(first.waited).toBeGreaterThanOrEqual(0);
    expect(first.ran).toBeGreaterThan(0);
    for (const timing of rest) {
      expect(timing.ran).toBe(rest[0].ran);
      // Queued together with the first, each waited for the first's run to end, or to pass 50 ms
      // (SLOW_RUN_MS), when the next run starts beside it (half of that: the queueing took time too).
      expect(timing.waited).toBeGreaterThan(Math.min(first.ran, 0.05) / 2);
    }
  });

  it('keeps going after a rejected event in the middle of a batch and keeps the order per delivery', async () => {
    const { actor, line, other } = await setup(2);
    const events = [
      scanEvent(line.id),
      scanEvent(other.id),
      scanEvent(line.id),
      scanEvent(line.id) /* third piece of two: rejected */,
      scanEvent(line.id, 'unscan'),
      scanEvent(line.id),
      scanEvent(other.id),
    ];
    const results = await applyEvents(api.db, actor, events);
    expect(results.map((r) => r.status)).toEqual(['applied', 'applied', 'applied', 'rejected', 'applied', 'applied', 'applied']);
    expect(results[3]).toMatchObject({ code: 'validation', reason: 'quantity_exceeded' });
    expect(results.map((r) => r.eventId)).toEqual(events.map((e) => e.eventId));
    const [item] = await api.db.select().from(deliveryItems).where(eq(deliveryItems.id, line.id));
    expect(item.scannedQuantity).toBe(2);
  });

  it('answers an event id seen before as duplicate with the current state, whatever the copy carries', async () => {
    const { actor, tour, line, other } = await setup();
    const id = randomUUID();
    const first = scanEvent(line.id, 'scan', id);
    const results = await applyEvents(api.db, actor, [first, { ...first }, scanEvent(other.id, 'scan', id)]);
    expect(results.map((r) => r.status)).toEqual(['applied', 'duplicate', 'duplicate']);
    // A copy in the batch naming a line of another delivery is another event: it shows nothing.
    expect(results[2]).toMatchObject({ entity: null, reason: 'other_event' });
    const [unscan] = await applyEvents(api.db, actor, [scanEvent(line.id, 'unscan', id)]);
    expect(unscan).toMatchObject({ status: 'duplicate', entity: { id: line.id, scannedQuantity: 1 } });
    // A later copy naming another line of the delivery is answered with the line the event scanned.
    const sibling = tour.deliveries[0].items[1];
    const [elsewhere] = await applyEvents(api.db, actor, [scanEvent(sibling.id, 'scan', id)]);
    expect(elsewhere).toMatchObject({ status: 'duplicate', entity: { id: line.id, scannedQuantity: 1 } });
    // A copy of another kind says nothing about what it names: the event did not touch it.
    const [holdHere] = await applyEvents(api.db, actor, [
      { ...first, type: 'delivery.hold', deliveryId: line.deliveryId, reason: 'x' } as SyncEvent,
    ]);
    const [hold] = await applyEvents(api.db, actor, [
      { ...first, type: 'delivery.hold', deliveryId: other.deliveryId, reason: 'x' } as SyncEvent,
    ]);
    expect([holdHere, hold]).toMatchObject([
      { status: 'duplicate', entity: null, reason: 'other_event' },
      { status: 'duplicate', entity: null, reason: 'other_event' },
    ]);
    // The same within one batch: a copy of another kind is another event, not the first one's state.
    const reused = randomUUID();
    const inBatch = await applyEvents(api.db, actor, [
      scanEvent(tour.deliveries[1].items[1].id, 'scan', reused),
      { type: 'delivery.hold', eventId: reused, occurredAt: now(), deliveryId: other.deliveryId, reason: 'x' } as SyncEvent,
    ]);
    expect(inBatch).toMatchObject([{ status: 'applied' }, { status: 'duplicate', entity: null, reason: 'other_event' }]);
    expect((await api.db.select().from(deliveries).where(eq(deliveries.id, line.deliveryId)))[0].state).toBe('active');
    const items = await api.db
      .select()
      .from(deliveryItems)
      .where(inArray(deliveryItems.id, [line.id, other.id]));
    expect(items.map((i) => i.scannedQuantity).sort()).toEqual([0, 1]);
    expect(await api.db.select().from(processedEvents).where(eq(processedEvents.eventId, id))).toHaveLength(1);
  });

  it('answers an event id another account recorded as not found where the event names nothing the sender can see, else as another event', async () => {
    const { actor, line } = await setup();
    const stranger = await setup();
    const id = randomUUID();
    await applyEvents(api.db, actor, [scanEvent(line.id, 'scan', id)]);
    const [othersLine] = await applyEvents(api.db, stranger.actor, [scanEvent(line.id, 'unscan', id)]);
    const [ownLine] = await applyEvents(api.db, stranger.actor, [scanEvent(stranger.line.id, 'scan', id)]);
    const [unknownLine] = await applyEvents(api.db, actor, [scanEvent(randomUUID(), 'scan', id)]);
    expect([othersLine.status, othersLine.code]).toEqual(['rejected', 'not_found']);
    // On the sender's own line the id is simply taken: it stands for another event, not a missing line.
    expect(ownLine).toMatchObject({ status: 'duplicate', entity: null, reason: 'other_event' });
    // The sender's own id: a duplicate even where the copy names a line that does not exist.
    expect(unknownLine).toMatchObject({ status: 'duplicate', entity: null });
    const [strangersItem] = await api.db.select().from(deliveryItems).where(eq(deliveryItems.id, stranger.line.id));
    expect(strangersItem.scannedQuantity).toBe(0);
    expect(await api.db.select().from(processedEvents).where(eq(processedEvents.eventId, id))).toHaveLength(1);
  });

  it('keeps the device time and the client id with every processed event', async () => {
    const { actor, line } = await setup();
    const event = { ...scanEvent(line.id), occurredAt: '2026-11-20T06:15:00.000Z' };
    await applyEvents(api.db, actor, [event], { clientId: 'phone-7' });
    const [row] = await api.db.select().from(processedEvents).where(eq(processedEvents.eventId, event.eventId));
    expect(row).toMatchObject({ clientId: 'phone-7', type: 'scan', accountId: actor.personalnummer });
    expect(row.occurredAt?.toISOString()).toBe('2026-11-20T06:15:00.000Z');
    expect(row.receivedAt.getTime()).toBeGreaterThan(Date.parse('2026-11-21T00:00:00Z'));
  });

  it('lets a note created offline be changed and deleted later in the same batch', async () => {
    const { actor, tour } = await setup();
    const deliveryId = tour.deliveries[0].delivery.id;
    const noteId = randomUUID();
    const base = { occurredAt: now(), noteId };
    // The update names no delivery: the note it changes exists only in this batch so far.
    const results = await applyEvents(api.db, actor, [
      { ...base, eventId: randomUUID(), type: 'note.create', deliveryId, text: 'erste Fassung' },
      { ...base, eventId: randomUUID(), type: 'note.update', text: 'zweite Fassung' },
    ]);
    expect(results.map((r) => r.status)).toEqual(['applied', 'applied']);
    const [row] = await api.db.select().from(notes).where(eq(notes.id, noteId));
    expect(row.text).toBe('zweite Fassung');
    const deletion = { ...base, eventId: randomUUID(), type: 'note.delete' } as SyncEvent;
    const deleted = await applyEvents(api.db, actor, [deletion]);
    expect(deleted[0].status).toBe('applied');
    // A resend of the deletion, whose note is gone, is the same event, not a reused id.
    const [resent] = await applyEvents(api.db, actor, [{ ...deletion }]);
    expect(resent).toEqual({ eventId: deletion.eventId, status: 'duplicate', entity: null });
  });

  it("keeps the uploaded image of a note that the same batch creates and deletes, as no note's", async () => {
    const { actor, tour } = await setup();
    const deliveryId = tour.deliveries[0].delivery.id;
    const noteId = randomUUID();
    const base = { occurredAt: now(), noteId };
    const results = await applyEvents(
      api.db,
      actor,
      [
        { ...base, eventId: randomUUID(), type: 'note.create', deliveryId, imageAttachment: '~bild' },
        { ...base, eventId: randomUUID(), type: 'note.delete' },
      ],
      { attachment: { reference: '~bild', contentType: 'image/png', sizeBytes: 3 } },
    );
    expect(results.map((r) => r.status)).toEqual(['applied', 'applied']);
    expect(await api.db.select().from(notes).where(eq(notes.id, noteId))).toEqual([]);
    const images = await api.db.select().from(attachments).where(eq(attachments.deliveryId, deliveryId));
    expect(images).toMatchObject([{ reference: '~bild', noteId: null }]);
  });

  it('answers one id sent by two drivers together by which of them recorded it', async () => {
    const [busy, alsoBusy, first, second] = await Promise.all(Array.from({ length: 4 }, () => setup()));
    // Pushes ahead of them keep the writer busy, so that the two copies after them go in one transaction.
    const together = async (firstCopy: SyncEvent, secondCopy: SyncEvent) =>
      (
        await Promise.all([
          applyEvents(api.db, busy.actor, [scanEvent(busy.line.id)]),
          applyEvents(api.db, alsoBusy.actor, [scanEvent(alsoBusy.line.id)]),
          applyEvents(api.db, first.actor, [firstCopy]),
          applyEvents(api.db, second.actor, [secondCopy]),
        ])
      )
        .slice(2)
        .map(([result]) => result);

    const taken = randomUUID();
    const [applied, other] = await together(scanEvent(first.line.id, 'scan', taken), scanEvent(second.line.id, 'scan', taken));
    expect([applied.status, other]).toEqual([
      'applied',
      expect.objectContaining({ status: 'duplicate', entity: null, reason: 'other_event' }),
    ]);
    // A first copy that records nothing (a line its sender cannot see) leaves the id to the second.
    const free = randomUUID();
    const [unseen, own] = await together(scanEvent(second.other.id, 'scan', free), scanEvent(second.other.id, 'scan', free));
    expect([unseen.code, own.status]).toEqual(['not_found', 'applied']);
    const lines = await api.db
      .select()
      .from(deliveryItems)
      .where(inArray(deliveryItems.id, [first.line.id, second.line.id, second.other.id]));
    expect(lines.map((l) => l.scannedQuantity).sort()).toEqual([0, 1, 1]);
  });

  inProcess.it('writes a batch of 100 scans of one delivery with a fixed number of statements', async () => {
    const { actor, line } = await setup(100);
    const small = await setup(100);
    const count = async (who: DriverActor, n: number, target: string) => {
      const { statements, result } = await api.statementsOf(() =>
        applyEvents(
          api.db,
          who,
          Array.from({ length: n }, () => scanEvent(target)),
        ),
      );
      expect(result.every((r) => r.status === 'applied')).toBe(true);
      return statements;
    };
    const forTen = await count(small.actor, 10, small.line.id);
    const forHundred = await count(actor, 100, line.id);
    expect(forHundred).toBe(forTen);
  });

  inProcess.it('writes a batch over several deliveries with the same statements as over one', async () => {
    const one = await setup(100);
    const two = await setup(100);
    const count = async (who: DriverActor, targets: string[]) => {
      const { statements, result } = await api.statementsOf(() =>
        applyEvents(
          api.db,
          who,
          Array.from({ length: 20 }, (_, n) => scanEvent(targets[n % targets.length])),
        ),
      );
      expect(result.every((r) => r.status === 'applied')).toBe(true);
      return statements;
    };
    const single = await count(one.actor, [one.line.id]);
    const spread = await count(two.actor, [two.line.id, two.other.id]);
    expect(spread).toBe(single);
  });

  inProcess.it('combines pushes of several drivers arriving together and answers each as if it had come alone', async () => {
    const drivers = await Promise.all(Array.from({ length: 8 }, () => setup(100)));
    const { statements: statementsAlone } = await api.statementsOf(() =>
      applyEvents(api.db, drivers[0].actor, [scanEvent(drivers[0].line.id)]),
    );

    const { statements, result: answers } = await api.statementsOf(() =>
      Promise.all(
        drivers.map(({ actor, line, other }, n) =>
          applyEvents(api.db, actor, [
            scanEvent(line.id),
            scanEvent(other.id),
            // Another driver's line is not found for this one.
            ...(n === 1 ? [scanEvent(drivers[2].line.id)] : []),
          ]),
        ),
      ),
    );

    for (const [n, results] of answers.entries())
      expect(
        results.slice(0, 2).map((r) => r.status),
        `driver ${n}`,
      ).toEqual(['applied', 'applied']);
    expect(answers[1][2]).toMatchObject({ status: 'rejected', code: 'not_found' });
    const scanned = await api.db
      .select()
      .from(deliveryItems)
      .where(
        inArray(
          deliveryItems.id,
          drivers.flatMap((d) => [d.line.id, d.other.id]),
        ),
      );
    expect(scanned.reduce((sum, item) => sum + item.scannedQuantity, 0)).toBe(1 + 16);
    // Two go at once, the other six wait and go together: far fewer statements than eight pushes alone.
    expect(statements).toBeLessThanOrEqual(4 * statementsAlone);
  });
});
