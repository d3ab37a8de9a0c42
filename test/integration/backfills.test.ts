import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { backfills, runBackfills } from '../../server/db/backfills.js';
import { databaseKinds } from '../helpers/databases.js';
import { completeAt, newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';
import { driverOf } from './admin.helpers.js';

describe.each(databaseKinds)('the backfills on %s', (kind) => {
  const api = useTestServer(kind);

  const kept = async () =>
    (
      await api.db.execute<Record<string, unknown>>(
        sql`SELECT id, review_changed_at, review_resolved_at, completed_entry_head FROM deliveries ORDER BY id`,
      )
    ).rows;
  const forget = async () => {
    await api.db.execute(sql`UPDATE deliveries SET review_changed_at = NULL, review_resolved_at = NULL, completed_entry_head = NULL`);
    await api.db.execute(sql`DELETE FROM tourline_backfills`);
  };

  it('fill what the writes keep, one batch of deliveries per transaction, and are done once', async () => {
    const token = await api.token(8401);
    const driver = driverOf(api, token);
    const { deliveries } = await newTour(api.db, { accountId: 8401, deliveries: 5 });
    await driver.scan(deliveries[0].items[0].id, 'remove');
    await driver.scan(deliveries[1].items[0].id, 'remove', { quantity: 1 });
    await driver.credit(deliveries[2].delivery.id, { action: 'set', amountCents: 2000, reason: 'Bruch' });
    expect(
      (await api.post(`/admin/reviews/${deliveries[0].delivery.id}/resolve`, { processor: 'Frau Weber' }, { admin: true })).status,
    ).toBe(204);
    await completeAt(api.db, deliveries[3].delivery.id, new Date('2026-11-30T10:00:00Z'));
    await completeAt(api.db, deliveries[4].delivery.id, new Date('2026-12-01T10:00:00Z'));
    const before = await kept();
    expect(before.filter((r) => r.review_changed_at !== null)).toHaveLength(3);
    expect(before.filter((r) => r.completed_entry_head !== null)).toHaveLength(2);

    await forget();
    const count = before.length;
    expect(await runBackfills(api.db, { batchSize: 2 })).toEqual(backfills.map((b) => ({ name: b.name, batches: Math.ceil(count / 2) })));
    expect(await kept()).toEqual(before);
    expect(await runBackfills(api.db, { batchSize: 2 })).toEqual([]);
  });

  it('never sets back what a writer moved on while they ran, and a second run changes nothing', async () => {
    const token = await api.token(8402);
    const driver = driverOf(api, token);
    const { deliveries } = await newTour(api.db, { accountId: 8402, deliveries: 1 });
    await driver.scan(deliveries[0].items[0].id, 'remove');
    const id = deliveries[0].delivery.id;
    const later = new Date('2099-01-01T00:00:00Z');
    await api.db.execute(sql`DELETE FROM tourline_backfills`);
    await api.db.execute(sql`UPDATE deliveries SET review_changed_at = ${later.toISOString()} WHERE id = ${id}`);
    await runBackfills(api.db);
    const { rows } = await api.db.execute<{ kept: boolean }>(
      sql`SELECT review_changed_at = ${later.toISOString()}::timestamptz AS kept FROM deliveries WHERE id = ${id}`,
    );
    expect(rows[0].kept).toBe(true);
    const all = await kept();
    await api.db.execute(sql`DELETE FROM tourline_backfills`);
    await runBackfills(api.db, { batchSize: 3 });
    expect(await kept()).toEqual(all);
  });
});
