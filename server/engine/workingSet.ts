import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import {
  articles, attachments, creditEvents, deliveries, deliveryItems, deliveryServiceValues, notes, paymentProtocol,
  processedEvents, scanAudit, tours,
} from '../db/schema.js';
import { toAttachment, toDelivery, toItem, toNote, toPayment, toServiceValue, type DeliveryRow, type ItemRow, type NoteRow, type ServiceValueRow } from '../queries/shapes.js';
import { recordChanges, type ChangeRecord } from './changeLog.js';

/**
 * One delivery loaded under its row lock, changed in memory by a run of events, and written
 * back with one statement per table: events for the same delivery cost no round trip each.
 */
export interface WorkingSet {
  accountId: number;
  delivery: DeliveryRow;
  deliveryDirty: boolean;
  items: Map<string, { row: ItemRow; scannable: boolean; dirty: boolean }>;
  /** Loaded only when an event needs them; null marks a deleted note. */
  notes?: Map<string, { row: NoteRow; state: 'clean' | 'new' | 'dirty' | 'deleted' }>;
  noteImages: Map<string, string>;
  serviceValues?: Map<string, { row: ServiceValueRow; state: 'clean' | 'dirty' | 'deleted' }>;
  inserts: {
    audit: (typeof scanAudit.$inferInsert)[];
    credits: (typeof creditEvents.$inferInsert)[];
    payments: (typeof paymentProtocol.$inferInsert)[];
    attachments: (typeof attachments.$inferInsert)[];
    processed: (typeof processedEvents.$inferInsert)[];
  };
  changes: ChangeRecord[];
}

/** Locks the delivery row of one of the actor's tours and loads what the events need; undefined when it is not theirs. */
export async function loadWorkingSet(tx: Db, deliveryId: string, accountId: number, needs: { notes: boolean; services: boolean }): Promise<WorkingSet | undefined> {
  const [locked] = await tx.select({ delivery: deliveries }).from(deliveries)
    .innerJoin(tours, eq(tours.id, deliveries.tourId))
    .where(and(eq(deliveries.id, deliveryId), eq(tours.accountId, accountId)))
    .for('update', { of: deliveries });
  if (!locked) return undefined;
  // One connection runs a transaction: its statements go one after another.
  const itemRows = await tx.select({ item: deliveryItems, scannable: articles.scannable }).from(deliveryItems)
    .innerJoin(articles, eq(articles.id, deliveryItems.articleId)).where(eq(deliveryItems.deliveryId, deliveryId));
  const noteRows = needs.notes ? await tx.select().from(notes).where(eq(notes.deliveryId, deliveryId)) : undefined;
  const imageRows = needs.notes ? await tx.select({ id: attachments.id, noteId: attachments.noteId }).from(attachments)
    .where(and(eq(attachments.deliveryId, deliveryId), eq(attachments.kind, 'note_image'))) : undefined;
  const valueRows = needs.services ? await tx.select().from(deliveryServiceValues).where(eq(deliveryServiceValues.deliveryId, deliveryId)) : undefined;
  return {
    accountId,
    delivery: locked.delivery,
    deliveryDirty: false,
    items: new Map(itemRows.map((r) => [r.item.id, { row: r.item, scannable: r.scannable, dirty: false }])),
    notes: noteRows && new Map(noteRows.map((row) => [row.id, { row, state: 'clean' as const }])),
    noteImages: new Map((imageRows ?? []).filter((r) => r.noteId).map((r) => [r.noteId!, r.id])),
    serviceValues: valueRows && new Map(valueRows.map((row) => [row.serviceId, { row, state: 'clean' as const }])),
    inserts: { audit: [], credits: [], payments: [], attachments: [], processed: [] },
    changes: [],
  };
}

export const currentDelivery = (ws: WorkingSet) => toDelivery(ws.delivery, [...ws.items.values()].map((i) => i.row));

export class ConcurrentDuplicate extends Error {}

/** Writes everything the events changed, then the change records: one statement per kind of change. */
export async function flushWorkingSet(tx: Db, ws: WorkingSet): Promise<void> {
  const now = new Date();
  const owner = { tourId: ws.delivery.tourId, accountId: ws.accountId };
  const changes: ChangeRecord[] = [];

  if (ws.inserts.processed.length > 0) {
    const inserted = await tx.insert(processedEvents).values(ws.inserts.processed).onConflictDoNothing().returning({ id: processedEvents.eventId });
    // Another transaction recorded one of these ids for another delivery since we looked.
    if (inserted.length !== ws.inserts.processed.length) throw new ConcurrentDuplicate();
  }

  const dirtyItems = [...ws.items.values()].filter((i) => i.dirty);
  if (dirtyItems.length > 0) {
    const values = JSON.stringify(dirtyItems.map(({ row }) => ({ id: row.id, s: row.scannedQuantity, c: row.creditedQuantity, st: row.state })));
    await tx.execute(sql`
      UPDATE delivery_items AS i SET scanned_quantity = v.s, credited_quantity = v.c, state = v.st, updated_at = now()
      FROM jsonb_to_recordset(${values}::jsonb) AS v(id uuid, s int, c int, st text) WHERE i.id = v.id`);
    for (const item of dirtyItems) changes.push({ entity: 'position', op: 'upsert', id: item.row.id, ...owner, data: toItem(item.row, item.scannable) });
  }

  if (ws.inserts.audit.length) await tx.insert(scanAudit).values(ws.inserts.audit);
  if (ws.inserts.credits.length) await tx.insert(creditEvents).values(ws.inserts.credits);
  if (ws.inserts.payments.length) await tx.insert(paymentProtocol).values(ws.inserts.payments);

  if (ws.notes) {
    const entries = [...ws.notes.values()];
    const created = entries.filter((n) => n.state === 'new').map((n) => n.row);
    const updated = entries.filter((n) => n.state === 'dirty').map((n) => n.row);
    const deleted = entries.filter((n) => n.state === 'deleted').map((n) => n.row.id);
    if (created.length) await tx.insert(notes).values(created);
    if (updated.length) {
      // The time set in memory is the one published in the change record, so it is the one stored.
      const values = JSON.stringify(updated.map((n) => ({ id: n.id, text: n.text, image: n.imageAttachment, at: n.updatedAt.toISOString() })));
      await tx.execute(sql`
        UPDATE notes AS n SET text = v.text, image_attachment = v.image, updated_at = v.at
        FROM jsonb_to_recordset(${values}::jsonb) AS v(id uuid, text text, image text, at timestamptz) WHERE n.id = v.id`);
    }
    if (deleted.length) {
      await tx.update(attachments).set({ noteId: null }).where(inArray(attachments.noteId, deleted));
      await tx.delete(notes).where(inArray(notes.id, deleted));
    }
    for (const n of [...created, ...updated]) changes.push({ entity: 'note', op: 'upsert', id: n.id, ...owner, data: toNote(n, ws.noteImages.get(n.id) ?? null) });
    for (const id of deleted) changes.push({ entity: 'note', op: 'delete', id, ...owner });
  }
  if (ws.inserts.attachments.length) {
    const rows = await tx.insert(attachments).values(ws.inserts.attachments).returning();
    for (const row of rows) changes.push({ entity: 'attachment', op: 'upsert', id: row.id, ...owner, data: toAttachment(row) });
  }

  if (ws.serviceValues) {
    const entries = [...ws.serviceValues.values()];
    const upserts = entries.filter((v) => v.state === 'dirty').map((v) => v.row);
    const removed = entries.filter((v) => v.state === 'deleted').map((v) => v.row.serviceId);
    if (upserts.length) {
      await tx.insert(deliveryServiceValues).values(upserts).onConflictDoUpdate({
        target: [deliveryServiceValues.deliveryId, deliveryServiceValues.serviceId],
        set: { boolValue: sql`excluded.bool_value`, numericValue: sql`excluded.numeric_value`, authorCarId: sql`excluded.author_car_id`, updatedAt: sql`excluded.updated_at` },
      });
    }
    if (removed.length) {
      await tx.delete(deliveryServiceValues).where(and(eq(deliveryServiceValues.deliveryId, ws.delivery.id), inArray(deliveryServiceValues.serviceId, removed)));
    }
    for (const row of upserts) changes.push({ entity: 'serviceValue', op: 'upsert', id: `${row.deliveryId}:${row.serviceId}`, ...owner, data: toServiceValue(row) });
    for (const serviceId of removed) changes.push({ entity: 'serviceValue', op: 'delete', id: `${ws.delivery.id}:${serviceId}`, ...owner });
  }

  for (const payment of ws.inserts.payments) {
    changes.push({ entity: 'payment', op: 'upsert', id: payment.id!, ...owner, data: toPayment(payment as Parameters<typeof toPayment>[0]) });
  }

  // Scans and credits change the open amount, so the delivery is republished whenever anything changed.
  if (ws.deliveryDirty) {
    ws.delivery.updatedAt = now;
    const { id, ...fields } = ws.delivery;
    await tx.update(deliveries).set(fields).where(eq(deliveries.id, id));
  }
  if (ws.deliveryDirty || changes.length > 0) {
    changes.unshift({ entity: 'delivery', op: 'upsert', id: ws.delivery.id, ...owner, data: currentDelivery(ws) });
  }
  await recordChanges(tx, changes);
}
