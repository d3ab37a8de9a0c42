import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GENERIC_PLANS, openDatabase, setLocal, type Database } from '../../server/db/client.js';
import { applyEvents } from '../../server/engine/apply.js';
import { createPostgresDatabase } from '../helpers/databases.js';
import { driverActor, newTour } from '../helpers/factories.js';

const ACCOUNT = 4711;

describe("the engine's plans on PostgreSQL", () => {
  let database: Database;

  beforeAll(async () => {
    // One connection: the plans the engine makes on it are the ones looked at afterwards.
    database = await openDatabase({ url: await createPostgresDatabase(), poolSize: 1 });
  });
  afterAll(() => database?.close());

  it('look recorded events up by key when their plan was made while the tables were empty', async () => {
    const db = database.db;
    const tour = await newTour(db, {
      accountId: ACCOUNT,
      positions: [{ scannable: true, quantity: 50, scannedQuantity: 0, state: 'InProgress' }],
    });
    const item = tour.deliveries[0].items[0];
    // Statistics that say "empty", as on a new database.
    await db.execute(sql`ANALYZE processed_events, scan_audit`);
    const scan = () => ({
      type: 'scan' as const,
      eventId: randomUUID(),
      occurredAt: new Date().toISOString(),
      deliveryItemId: item.id,
      action: 'scan' as const,
    });
    const [first] = await applyEvents(db, driverActor(ACCOUNT), [scan()]);
    expect(first.status).toBe('applied');

    // The tables grow faster than autovacuum renews their statistics: the plan made above stays.
    await db.execute(sql`INSERT INTO processed_events (event_id, type, account_id, delivery_id, occurred_at)
      SELECT gen_random_uuid(), 'scan', ${ACCOUNT}, ${item.deliveryId}, now() FROM generate_series(1, 20000)`);
    const plan = await db.transaction(async (tx) => {
      void setLocal(tx, GENERIC_PLANS);
      const rows = await tx.execute<{ 'QUERY PLAN': string }>(
        sql.raw(`EXPLAIN EXECUTE engine_read_items('{}', '{${item.id}}', '{${randomUUID()}}')`),
      );
      return rows.rows.map((r) => r['QUERY PLAN']).join('\n');
    });
    expect(plan).toContain('processed_events_pkey');
    expect(plan).not.toMatch(/Seq Scan on (processed_events|scan_audit)/);

    const [second] = await applyEvents(db, driverActor(ACCOUNT), [scan()]);
    expect(second.status).toBe('applied');
  });
});
