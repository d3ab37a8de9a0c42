import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';
import { driverOf } from './admin.helpers.js';

const admin = { admin: true } as const;

describe.each(databaseKinds)('the review marker on %s', (kind) => {
  const api = useTestServer(kind);

  // The marker as the audit defines it, for every delivery.
  const driftedMarkers = async () =>
    (
      await api.db.execute<{ id: string }>(sql`
      SELECT d.id FROM deliveries d WHERE d.review_changed_at IS DISTINCT FROM GREATEST(
          (SELECT max(received_at) FROM scan_audit s WHERE s.delivery_id = d.id AND s.action IN ('remove', 'unremove')),
          (SELECT max(received_at) FROM credit_events c WHERE c.delivery_id = d.id))
        OR d.review_resolved_at IS DISTINCT FROM (SELECT max(resolved_at) FROM review_resolutions r WHERE r.delivery_id = d.id)`)
    ).rows;
  const pendingIds = async () => {
    const response = await api.get('/admin/reviews', admin);
    expect(response.status).toBe(200);
    return (response.body as { delivery_id: string }[]).map((r) => r.delivery_id).sort();
  };

  it('is kept by removals, their undoing, piece and money credits and confirmations, and the list follows it', async () => {
    const token = await api.token(8301);
    const driver = driverOf(api, token);
    const {
      deliveries: [first, second],
    } = await newTour(api.db, { accountId: 8301, deliveries: 2 });
    const resolve = async (deliveryId: string) => {
      const response = await api.post(`/admin/reviews/${deliveryId}/resolve`, { processor: 'Frau Weber' }, admin);
      expect(response.status).toBe(204);
    };
    const steps: [string, () => Promise<unknown>, string[]][] = [
      ['a removal', () => driver.scan(first.items[0].id, 'remove'), [first.delivery.id]],
      [
        'a money credit',
        () => driver.credit(second.delivery.id, { action: 'set', amountCents: 2000, reason: 'Bruch' }),
        [first.delivery.id, second.delivery.id],
      ],
      ['a confirmation', () => resolve(first.delivery.id), [second.delivery.id]],
      ['the removal undone', () => driver.scan(first.items[0].id, 'unremove'), [second.delivery.id]],
      ['a piece credit', () => driver.scan(first.items[0].id, 'remove', { quantity: 1 }), [first.delivery.id, second.delivery.id]],
      ['the money credit removed', () => driver.credit(second.delivery.id, { action: 'remove' }), [first.delivery.id]],
      ['a second confirmation', () => resolve(first.delivery.id), []],
    ];
    for (const [name, step, pending] of steps) {
      await step();
      expect(await driftedMarkers(), `after ${name}`).toEqual([]);
      expect(await pendingIds(), `after ${name}`).toEqual([...pending].sort());
    }
  });
});
