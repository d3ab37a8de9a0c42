import { inArray, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { deliveries, deliveryItems } from '../../db/schema.js';
import { toDelivery, type DeliveryRow } from '../../shapes/rows.js';
import type { ChangeRecord } from '../changeLog.js';
import type { DeliveryInput } from './deliveries.js';

/** A stored delivery the ERP sent with `withdrawn`, locked by the sync, with its owner. */
export interface Withdrawal {
  input: DeliveryInput & { withdrawn: { reason: string } };
  prev: { delivery: DeliveryRow; accountId: number };
}

export interface Withdrawn {
  /** Canceled now, with the ERP's reason. */
  canceled: DeliveryRow[];
  /** Numbers of deliveries a driver had worked on (or completed): they stay as they are. */
  refused: string[];
  changes: ChangeRecord[];
}

/**
 * Work on a delivery: anything a driver recorded for it (a scan or removal, a credit, a payment,
 * a note, a service value) or a state other than active. A delivery with any of it is never dropped.
 */
const worked = (ids: string[]) => sql<{ id: string }>`
  SELECT d.id FROM ${deliveries} d WHERE d.id IN (${sql.join(
    ids.map((id) => sql`${id}::uuid`),
    sql`, `,
  )}) AND (d.state <> 'active' OR d.credit_amount_cents IS NOT NULL
    OR EXISTS (SELECT 1 FROM scan_audit a WHERE a.delivery_id = d.id)
    OR EXISTS (SELECT 1 FROM credit_events c WHERE c.delivery_id = d.id)
    OR EXISTS (SELECT 1 FROM payment_protocol p WHERE p.delivery_id = d.id)
    OR EXISTS (SELECT 1 FROM notes n WHERE n.delivery_id = d.id)
    OR EXISTS (SELECT 1 FROM delivery_service_values v WHERE v.delivery_id = d.id))`;

/**
 * The ERP withdraws deliveries nobody has worked on: they become `canceled` with its reason, and
 * their drivers' apps receive the change. One already canceled stays as it is; one worked on is
 * kept and reported by number. The rows are locked by the sync (the engine's delivery lock).
 */
export async function withdrawDeliveries(tx: Db, withdrawals: Withdrawal[]): Promise<Withdrawn> {
  const pending = withdrawals.filter((w) => w.prev.delivery.state !== 'canceled');
  if (!pending.length) return { canceled: [], refused: [], changes: [] };
  const busy = new Set((await tx.execute<{ id: string }>(worked(pending.map((w) => w.prev.delivery.id)))).rows.map((r) => r.id));
  const refused = pending.filter((w) => busy.has(w.prev.delivery.id)).map((w) => w.input.belegnummer);
  const free = pending.filter((w) => !busy.has(w.prev.delivery.id));
  const canceled: DeliveryRow[] = [];
  for (const { input, prev } of free) {
    const [row] = await tx
      .update(deliveries)
      .set({ state: 'canceled', stateReason: input.withdrawn.reason, updatedAt: sql`now()` })
      .where(inArray(deliveries.id, [prev.delivery.id]))
      .returning();
    canceled.push(row);
  }
  const items = canceled.length
    ? await tx
        .select()
        .from(deliveryItems)
        .where(
          inArray(
            deliveryItems.deliveryId,
            canceled.map((d) => d.id),
          ),
        )
    : [];
  const ownerOf = new Map(free.map((w) => [w.prev.delivery.id, w.prev.accountId]));
  const changes: ChangeRecord[] = canceled.map((row) => ({
    entity: 'delivery',
    op: 'upsert',
    id: row.id,
    tourId: row.tourId,
    accountId: ownerOf.get(row.id)!,
    data: toDelivery(
      row,
      items.filter((i) => i.deliveryId === row.id),
    ),
  }));
  return { canceled, refused, changes };
}
