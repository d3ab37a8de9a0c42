import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { reviewResolutions } from '../../server/db/schema.js';
import { databaseKinds } from '../helpers/databases.js';
import { completeAt, newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';
import { driverOf, expectSnakeCase } from './admin.helpers.js';
import { inProcess } from '../helpers/target.js';

const admin = { admin: true } as const;

describe.each(databaseKinds)('four-eyes review on %s', (kind) => {
  const api = useTestServer(kind);

  const reviewOf = async (deliveryId: string) => {
    const response = await api.get('/admin/reviews', admin);
    expect(response.status).toBe(200);
    expectSnakeCase(response.body);
    return response.body.find((r: { delivery_id: string }) => r.delivery_id === deliveryId);
  };
  const resolve = async (deliveryId: string, processor = 'Frau Weber') => {
    const response = await api.post(`/admin/reviews/${deliveryId}/resolve`, { processor }, admin);
    expect(response.status).toBe(204);
    expect(response.text).toBe('');
  };

  it('lists nothing for a delivery without deviation, even after scans', async () => {
    const token = await api.token(8001);
    const {
      deliveries: [{ delivery, items }],
    } = await newTour(api.db, { accountId: 8001, positions: [{ quantity: 2, state: 'InProgress', scannedQuantity: 0 }] });
    await driverOf(api, token).scan(items[0].id, 'scan');
    expect(await reviewOf(delivery.id)).toBeUndefined();
  });

  it('follows a delivery through remove, resolve, unremove, remove again, credit and credit removed', async () => {
    const token = await api.token(8002);
    const driver = driverOf(api, token);
    const {
      tour,
      customer,
      deliveries: [{ delivery, items }],
    } = await newTour(api.db, { accountId: 8002, tourDate: '2026-09-14' });
    const line = items[0];

    await driver.scan(line.id, 'remove');
    const first = await reviewOf(delivery.id);
    expect(first).toMatchObject({
      delivery_id: delivery.id,
      belegnummer: delivery.belegnummer,
      belegart_id: 1,
      tour_id: tour.id,
      tour_date: '2026-09-14',
      driver: { personalnummer: 8002, name: 'Fahrer 8002' },
      customer: { id: customer.id, name: customer.name },
      state: 'active',
      completed_at: null,
      last_resolution: null,
      deviation: { removed_lines: 1, credited_lines: 0, credited_pieces: 0, money_credit_cents: null },
      modified_positions: [{ id: line.id, line_number: 10, state: 'Removed', required_quantity: 2 }],
    });
    expect(first.changes).toEqual([
      expect.objectContaining({ kind: 'line_removed', delivery_item_id: line.id, quantity: 2, after_last_resolution: true }),
    ]);

    const belegReview = async () => (await api.get(`/admin/belege/${delivery.belegnummer}`, admin)).body.deliveries[0].review;
    expect(await belegReview()).toMatchObject({ pending: true, last_change_at: expect.any(String), last_resolution: null });

    await resolve(delivery.id);
    expect(await reviewOf(delivery.id)).toBeUndefined();
    // The document's full package tells the same, with who confirmed it.
    expect(await belegReview()).toMatchObject({
      pending: false,
      last_resolution: { processor: 'Frau Weber', resolved_at: expect.any(String) },
    });

    await driver.scan(line.id, 'unremove');
    expect(await reviewOf(delivery.id)).toBeUndefined();

    await driver.scan(line.id, 'remove');
    const again = await reviewOf(delivery.id);
    expect(again.last_resolution).toMatchObject({ processor: 'Frau Weber' });
    expect(again.changes.map((c: { kind: string; after_last_resolution: boolean }) => [c.kind, c.after_last_resolution])).toEqual([
      ['line_removed', false],
      ['line_restored', true],
      ['line_removed', true],
    ]);

    await driver.scan(line.id, 'unremove');
    // Restored to the original state: nothing to review, although it changed after the confirmation.
    expect(await reviewOf(delivery.id)).toBeUndefined();

    await driver.credit(delivery.id, { action: 'set', amountCents: 3000, reason: 'Lieferung verspätet' });
    expect(await reviewOf(delivery.id)).toMatchObject({ deviation: { removed_lines: 0, money_credit_cents: 3000 } });

    await driver.credit(delivery.id, { action: 'remove' });
    expect(await reviewOf(delivery.id)).toBeUndefined();
  });

  it('times deviations and confirmations when their row is written, not when their transaction began', async () => {
    const {
      deliveries: [{ delivery }],
    } = await newTour(api.db, { accountId: 8090 });
    const times = await api.db.transaction(async (tx) => {
      const [first] = await tx.insert(reviewResolutions).values({ deliveryId: delivery.id, processor: 'A' }).returning();
      await new Promise((resolve) => setTimeout(resolve, 20));
      const [second] = await tx.insert(reviewResolutions).values({ deliveryId: delivery.id, processor: 'B' }).returning();
      return [first.resolvedAt.getTime(), second.resolvedAt.getTime()];
    });
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(15);
  });

  it('stays pending when only one of two deviations is undone', async () => {
    const token = await api.token(8003);
    const driver = driverOf(api, token);
    const {
      deliveries: [{ delivery, items }],
    } = await newTour(api.db, { accountId: 8003 });
    await driver.scan(items[0].id, 'remove');
    await driver.credit(delivery.id, { action: 'set', amountCents: 1000, reason: 'Kratzer' });
    await driver.credit(delivery.id, { action: 'remove' });
    expect(await reviewOf(delivery.id)).toMatchObject({ deviation: { removed_lines: 1, money_credit_cents: null } });
  });

  it('is pending again when a confirmed delivery gets a money credit, and lists completed deliveries too', async () => {
    const token = await api.token(8004);
    const driver = driverOf(api, token);
    const {
      deliveries: [{ delivery, items }],
    } = await newTour(api.db, { accountId: 8004 });
    await driver.scan(items[0].id, 'remove', { quantity: 1 });
    await resolve(delivery.id, 'Herr Schulz');
    expect(await reviewOf(delivery.id)).toBeUndefined();
    await driver.credit(delivery.id, { action: 'set', amountCents: 2000, reason: 'Nachlass' });
    await completeAt(api.db, delivery.id, new Date('2026-09-15T10:00:00Z'));
    expect(await reviewOf(delivery.id)).toMatchObject({
      state: 'completed',
      completed_at: '2026-09-15T10:00:00.000Z',
      deviation: { credited_lines: 1, credited_pieces: 1, money_credit_cents: 2000 },
      last_resolution: { processor: 'Herr Schulz' },
    });
  });

  it('describes each change with its size, time, car and reason note', async () => {
    const token = await api.token(8005);
    const driver = driverOf(api, token);
    const car = await driver.car();
    const {
      deliveries: [{ delivery, items }],
    } = await newTour(api.db, {
      accountId: 8005,
      positions: [{ quantity: 5, articleName: 'Apfelsaft 6 x 1 l' }, { quantity: 3 }],
    });
    const before = Date.now();
    await driver.scan(items[0].id, 'remove', { quantity: 2, reason: 'beschädigt', authorCarId: car.id });
    const pieceNote = await driver.note(delivery.id, { text: 'Zwei Kisten nass', creditDeliveryItemId: items[0].id, authorCarId: car.id });
    await driver.scan(items[1].id, 'remove', { authorCarId: car.id });
    await driver.credit(delivery.id, { action: 'set', amountCents: 2000, reason: 'Wartezeit', authorCarId: car.id });
    const creditNote = await driver.note(delivery.id, { text: 'Kunde wartete 40 Minuten', isAmountCreditNote: true });
    await driver.credit(delivery.id, { action: 'set', amountCents: 3000, reason: 'Wartezeit länger' });

    const review = await reviewOf(delivery.id);
    expect(review.deviation).toEqual({ removed_lines: 1, credited_lines: 1, credited_pieces: 2, money_credit_cents: 3000 });
    expect(review.modified_positions.map((p: { id: string }) => p.id)).toEqual([items[0].id, items[1].id]);
    const [pieces, removal, credit, raised] = review.changes;
    expect(pieces).toMatchObject({
      kind: 'pieces_credited',
      delivery_item_id: items[0].id,
      line_number: 10,
      article_name: 'Apfelsaft 6 x 1 l',
      quantity: 2,
      amount_cents: null,
      account_id: 8005,
      car_id: car.id,
      car_plate: car.plate,
      reason: 'beschädigt',
      reason_note: { id: pieceNote.id, text: 'Zwei Kisten nass' },
      after_last_resolution: true,
    });
    expect(Date.parse(pieces.at)).toBeGreaterThanOrEqual(before - 1000);
    expect(pieces.occurred_at).toEqual(expect.any(String));
    expect(removal).toMatchObject({
      kind: 'line_removed',
      delivery_item_id: items[1].id,
      line_number: 20,
      quantity: 3,
      car_plate: car.plate,
      reason_note: null,
    });
    expect(credit).toMatchObject({
      kind: 'money_credit_set',
      amount_cents: 2000,
      reason: 'Wartezeit',
      car_id: car.id,
      reason_note: { id: creditNote.id },
    });
    expect(raised).toMatchObject({ kind: 'money_credit_set', amount_cents: 3000, car_id: null, car_plate: null });
    expect(review.last_change_at).toBe(raised.at);
    expect(review.changes.map((c: { at: string }) => c.at)).toEqual(review.changes.map((c: { at: string }) => c.at).sort());
  });

  inProcess.it('reads the list in a fixed number of queries, whatever the number of pending reviews', async () => {
    const token = await api.token(8006);
    const driver = driverOf(api, token);
    const count = async () => {
      const { statements, result } = await api.statementsOf(() => api.get('/admin/reviews', admin));
      expect(result.status).toBe(200);
      return statements;
    };
    const {
      deliveries: [one],
    } = await newTour(api.db, { accountId: 8006, tourDate: '2026-11-02' });
    await driver.scan(one.items[0].id, 'remove');
    const withFew = await count();
    const { deliveries: many } = await newTour(api.db, { accountId: 8006, deliveries: 4, tourDate: '2026-11-03' });
    for (const d of many) {
      await driver.scan(d.items[0].id, 'remove', { quantity: 1 });
      await driver.credit(d.delivery.id, { action: 'set', amountCents: 1000, reason: 'Test' });
    }
    expect(await count()).toBe(withFew);
  });

  describe('POST /admin/reviews/{delivery_id}/resolve', () => {
    it('records the processor and the time, trimmed', async () => {
      const {
        deliveries: [{ delivery }],
      } = await newTour(api.db, { accountId: 8010 });
      const before = Date.now();
      await resolve(delivery.id, '  Frau Weber ');
      const rows = await api.db.select().from(reviewResolutions);
      const row = rows.find((r) => r.deliveryId === delivery.id)!;
      expect(row.processor).toBe('Frau Weber');
      expect(row.resolvedAt.getTime()).toBeGreaterThanOrEqual(before - 1000);
    });

    it.each([
      ['an empty processor', { processor: '' }],
      ['a blank processor', { processor: '   ' }],
      ['no processor', {}],
      ['a processor that is not a string', { processor: 42 }],
      ['a processor longer than 200 characters', { processor: 'x'.repeat(201) }],
    ])('answers 400 for %s and records nothing', async (_why, body) => {
      const {
        deliveries: [{ delivery }],
      } = await newTour(api.db, { accountId: 8011 });
      const response = await api.post(`/admin/reviews/${delivery.id}/resolve`, body, admin);
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation');
      const rows = await api.db.select().from(reviewResolutions);
      expect(rows.some((r) => r.deliveryId === delivery.id)).toBe(false);
    });

    it.each(['not-a-uuid', '123', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1'])('answers 400 for the delivery id %s', async (id) => {
      const response = await api.post(`/admin/reviews/${id}/resolve`, { processor: 'Frau Weber' }, admin);
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation');
    });

    it('answers 404 for an unknown delivery', async () => {
      const response = await api.post(`/admin/reviews/${randomUUID()}/resolve`, { processor: 'Frau Weber' }, admin);
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('not_found');
    });
  });
});
