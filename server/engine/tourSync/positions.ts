import { and, eq, inArray, notExists, sql } from 'drizzle-orm';
import { lineStateAfterResync, mayDeleteUnsentLine } from '../../../shared/rules/resync.js';
import { deliveryKey } from '../../../shared/schemas/tours.js';
import type { Db } from '../../db/client.js';
import { deliveryItems, notes, scanAudit } from '../../db/schema.js';
import type { DeliveryRow, ItemRow } from '../../shapes/rows.js';
import type { OpenDelivery } from './deliveries.js';
import type { MasterData } from './masterData.js';
import { differs, insertAll, whenChanged } from './upserts.js';

const itemMirror = [
  deliveryItems.articleId,
  deliveryItems.warehouseId,
  deliveryItems.requiredQuantity,
  deliveryItems.unit,
  deliveryItems.unitPriceCents,
  deliveryItems.state,
];

export interface SyncedPositions {
  /** Ids of the lines stored before the sync. */
  before: Set<string>;
  written: ItemRow[];
  deleted: ItemRow[];
  /** Every line of the open deliveries after the sync. */
  byDelivery: Map<string, ItemRow[]>;
}

/** Writes the lines of the open deliveries and deletes the unsent ones nothing was done with. */
export async function syncPositions(
  tx: Db,
  open: OpenDelivery[],
  current: Map<string, DeliveryRow>,
  master: MasterData,
): Promise<SyncedPositions> {
  const deliveryIds = open.map((o) => current.get(deliveryKey(o.input))!.id);
  const itemRows = deliveryIds.length ? await tx.select().from(deliveryItems).where(inArray(deliveryItems.deliveryId, deliveryIds)) : [];
  const itemsOf = new Map<string, Map<number, ItemRow>>();
  for (const item of itemRows) {
    if (!itemsOf.has(item.deliveryId)) itemsOf.set(item.deliveryId, new Map());
    itemsOf.get(item.deliveryId)!.set(item.lineNumber, item);
  }
  const itemValues = open
    .flatMap(({ input }) => {
      const deliveryId = current.get(deliveryKey(input))!.id;
      return input.positions.map((p) => ({
        deliveryId,
        lineNumber: p.lineNumber,
        articleId: master.articleByNumber.get(p.article.articleNumber)!.id,
        warehouseId: p.warehouse ? master.warehouseId.get(p.warehouse.code)! : null,
        requiredQuantity: p.quantity,
        unit: p.unit ?? null,
        unitPriceCents: p.unitPriceCents ?? null,
        state: lineStateAfterResync(itemsOf.get(deliveryId)?.get(p.lineNumber), p.quantity),
      }));
    })
    .sort((a, b) => a.deliveryId.localeCompare(b.deliveryId) || a.lineNumber - b.lineNumber);
  const toWrite = itemValues.filter((v) => differs(itemsOf.get(v.deliveryId)?.get(v.lineNumber), v, itemMirror));
  const written = await insertAll(toWrite, (chunk: typeof itemValues) =>
    tx
      .insert(deliveryItems)
      .values(chunk)
      .onConflictDoUpdate({
        target: [deliveryItems.deliveryId, deliveryItems.lineNumber],
        ...whenChanged(itemMirror),
      })
      .returning(),
  );

  // Lines the ERP no longer sends go only when nothing was done with them; worked lines stay.
  const sentLines = new Set(itemValues.map((v) => `${v.deliveryId}/${v.lineNumber}`));
  const unsent = itemRows.filter((i) => !sentLines.has(`${i.deliveryId}/${i.lineNumber}`) && mayDeleteUnsentLine(i));
  const deleted = unsent.length
    ? await tx
        .delete(deliveryItems)
        .where(
          and(
            inArray(
              deliveryItems.id,
              unsent.map((i) => i.id),
            ),
            notExists(
              tx
                .select({ one: sql`1` })
                .from(scanAudit)
                .where(eq(scanAudit.deliveryItemId, deliveryItems.id)),
            ),
            notExists(
              tx
                .select({ one: sql`1` })
                .from(notes)
                .where(eq(notes.creditDeliveryItemId, deliveryItems.id)),
            ),
          ),
        )
        .returning()
    : [];

  const itemsNow = new Map(itemRows.map((i) => [i.id, i]));
  for (const item of written) itemsNow.set(item.id, item);
  for (const item of deleted) itemsNow.delete(item.id);
  const byDelivery = new Map<string, ItemRow[]>();
  for (const item of itemsNow.values()) {
    if (!byDelivery.has(item.deliveryId)) byDelivery.set(item.deliveryId, []);
    byDelivery.get(item.deliveryId)!.push(item);
  }
  return { before: new Set(itemRows.map((i) => i.id)), written, deleted, byDelivery };
}
