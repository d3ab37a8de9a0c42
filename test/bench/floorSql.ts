import type { Driver } from './seed.js';
import type { ScanEvent } from './jobs.js';

export type Query = (text: string, params: unknown[]) => Promise<unknown>;
/** Runs `work` in one transaction. */
export type FloorExecutor = (work: (query: Query) => Promise<void>) => Promise<void>;

/**
 * The rows the engine writes for a batch of scans (processed events, item counters, audit,
 * delivery touch, change records with the entities' JSON), written with one plain statement
 * per table in one transaction: no HTTP, no validation, no per-delivery transactions.
 */
export async function floorBatch(exec: FloorExecutor, driver: Driver, groups: { deliveryId: string; events: ScanEvent[] }[]) {
  const events = groups.flatMap((g) => g.events.map((e) => ({ ...e, deliveryId: g.deliveryId })));
  const deliveryIds = groups.map((g) => g.deliveryId);
  const perItem = new Map<string, number>();
  for (const e of events) perItem.set(e.deliveryItemId, (perItem.get(e.deliveryItemId) ?? 0) + 1);
  const processed = JSON.stringify(
    events.map((e) => ({
      event_id: e.eventId,
      type: e.type,
      client_id: `floor-${driver.personalnummer}`,
      account_id: driver.personalnummer,
      delivery_id: e.deliveryId,
      occurred_at: e.occurredAt,
    })),
  );
  const audit = JSON.stringify(
    events.map((e) => ({
      client_scan_id: e.eventId,
      delivery_id: e.deliveryId,
      delivery_item_id: e.deliveryItemId,
      occurred_at: e.occurredAt,
    })),
  );
  const items = JSON.stringify([...perItem].map(([id, n]) => ({ id, n })));
  const itemIds = [...perItem.keys()];
  await exec(async (query) => {
    await query('SELECT id FROM deliveries WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE', [deliveryIds]);
    await query(
      `INSERT INTO processed_events (event_id, type, client_id, account_id, delivery_id, occurred_at)
      SELECT * FROM jsonb_to_recordset($1::jsonb) AS v(event_id uuid, type text, client_id text, account_id bigint, delivery_id uuid, occurred_at timestamptz)`,
      [processed],
    );
    // The item ids also as an array, so that the planner looks the lines up by key (as the engine does).
    await query(
      `UPDATE delivery_items AS i SET scanned_quantity = i.scanned_quantity + v.n, updated_at = now()
      FROM jsonb_to_recordset($1::jsonb) AS v(id uuid, n int) WHERE i.id = v.id AND i.id = ANY($2::uuid[])`,
      [items, itemIds],
    );
    await query(
      `INSERT INTO scan_audit (client_scan_id, delivery_id, delivery_item_id, action, scanned_quantity_after, credited_quantity_after, state_after, account_id, occurred_at)
      SELECT v.client_scan_id, v.delivery_id, v.delivery_item_id, 'scan', i.scanned_quantity, i.credited_quantity, i.state, $2::bigint, v.occurred_at
      FROM jsonb_to_recordset($1::jsonb) AS v(client_scan_id uuid, delivery_id uuid, delivery_item_id uuid, occurred_at timestamptz)
      JOIN delivery_items i ON i.id = v.delivery_item_id WHERE i.id = ANY($3::uuid[])`,
      [audit, driver.personalnummer, itemIds],
    );
    await query('UPDATE deliveries SET updated_at = now() WHERE id = ANY($1::uuid[])', [deliveryIds]);
    await query(
      `INSERT INTO change_log (entity, op, entity_id, tour_id, account_id, data)
      SELECT 'position', 'upsert', i.id::text, d.tour_id, $3::bigint, to_jsonb(i) FROM delivery_items i JOIN deliveries d ON d.id = i.delivery_id WHERE i.id = ANY($1::uuid[])
      UNION ALL
      SELECT 'delivery', 'upsert', d.id::text, d.tour_id, $3::bigint, to_jsonb(d) FROM deliveries d WHERE d.id = ANY($2::uuid[])`,
      [itemIds, deliveryIds, driver.personalnummer],
    );
  });
}
