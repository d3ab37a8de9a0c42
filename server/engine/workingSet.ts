import { inArray, sql } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import { executePrepared, lastStatement, variantName, type Db } from '../db/client.js';
import { constraintViolation } from '../db/errors.js';
import { arrayLiteral, fromJsonRows, inList, inPlaceholder } from '../db/jsonRows.js';
import {
  articles,
  attachments,
  creditEvents,
  deliveries,
  deliveryItems,
  deliveryServiceValues,
  erpCancellations,
  notes,
  paymentProtocol,
  processedEvents,
  scanAudit,
  tours,
} from '../db/schema.js';
import type { AttachmentRow, DeliveryRow, ItemRow, NoteRow, ServiceValueRow } from '../shapes/rows.js';
import { changeLogAppend, changeLogValues } from './changeLog.js';
import { keepReviewChange } from './reviewMarker.js';
import { changesOf, currentDelivery } from './workingSetShapes.js';

/** An event recorded before; for a scan, with the line it scanned (its audit entry bears the event's id). */
export type RecordedEvent = typeof processedEvents.$inferSelect & { lineId: string | null };

/**
 * One delivery loaded under its row lock and changed in memory by a run of events; the batch it
 * belongs to is written back with one statement per table, so events cost no round trip each.
 */
export interface WorkingSet {
  accountId: number;
  delivery: DeliveryRow;
  deliveryDirty: boolean;
  /** The delivery's public shape as loaded, as JSON: its change record is written only when the shape differs. */
  loadedDelivery: string;
  items: Map<string, { row: ItemRow; scannable: boolean; dirty: boolean }>;
  /** Loaded only when an event needs them; null marks a deleted note. */
  notes?: Map<string, { row: NoteRow; state: 'clean' | 'new' | 'dirty' | 'deleted' }>;
  /** Note id → its image attachment. */
  noteImages: Map<string, AttachmentRow>;
  /** Images whose note was deleted or now shows another image: they stay, no longer a note's. */
  releasedImages: AttachmentRow[];
  serviceValues?: Map<string, { row: ServiceValueRow; state: 'clean' | 'dirty' | 'deleted' }>;
  inserts: {
    audit: (typeof scanAudit.$inferInsert)[];
    credits: (typeof creditEvents.$inferInsert)[];
    payments: (typeof paymentProtocol.$inferInsert)[];
    attachments: AttachmentRow[];
    processed: (typeof processedEvents.$inferInsert)[];
  };
}

type JsonRows = Record<string, unknown>[] | null;

/** What a batch's events name: deliveries, and the lines and notes that lead to theirs. */
export interface Targets {
  deliveryIds: string[];
  itemIds: string[];
  noteIds: string[];
}

/**
 * Locks the deliveries the events name, directly or through a line or a note (in id order, so
 * two batches never wait on each other in a circle), then reads in ONE statement what the events
 * need of them, and which of `eventIds` are already recorded: read under the locks, so a copy of
 * an event that committed meanwhile is seen. Every locked delivery gets a working set, whoever's
 * tour it is on; the caller matches them with the events' accounts.
 * The read is a statement of its own, as one statement's snapshot is taken before it waits for a
 * lock. Both go out together (the connection pipelines them) and the server runs the read once
 * the locks are held, so the read finds the deliveries by what the events name, as the lock does:
 * lines and notes never move to another delivery.
 */
export async function loadWorkingSets(
  tx: Db,
  targets: Targets,
  needs: { notes: boolean; services: boolean },
  eventIds: string[],
): Promise<{ sets: Map<string, WorkingSet>; processed: RecordedEvent[] }> {
  const has = { items: targets.itemIds.length > 0, notes: targets.noteIds.length > 0 };
  const named = () => {
    const parts = [sql`SELECT unnest(${sql.placeholder('deliveryIds')}::uuid[])`];
    if (has.items)
      parts.push(sql`SELECT ${deliveryItems.deliveryId} FROM ${deliveryItems} WHERE ${inPlaceholder(deliveryItems.id, 'itemIds')}`);
    if (has.notes) parts.push(sql`SELECT ${notes.deliveryId} FROM ${notes} WHERE ${inPlaceholder(notes.id, 'noteIds')}`);
    return sql.join(parts, sql` UNION ALL `);
  };
  const targetValues = Object.fromEntries(Object.entries(targets).map(([key, ids]) => [key, arrayLiteral(ids)]));
  // The ids are worked out once, before any lock (an array of the statement's own), and only
  // deliveries is locked: a delivery updated by a commit while the statement waited for it is
  // rechecked against that array alone. Joined with the ids' subquery and the tours, the
  // recheck of a plan by key (PostgreSQL's choice from some 10,000 deliveries on) dropped the
  // delivery, and the push answered its events "not found".
  const lock = executePrepared<{ delivery: Record<string, unknown>; account_id: string }>(
    tx,
    `engine_lock${variantName(has)}`,
    () => sql`
      SELECT to_json(${deliveries}) AS delivery,
        (SELECT ${tours.accountId} FROM ${tours} WHERE ${tours.id} = ${deliveries.tourId}) AS account_id
      FROM ${deliveries}
      WHERE ${deliveries.id} = ANY(ARRAY(${named()}))
      ORDER BY ${deliveries.id} FOR UPDATE`,
    targetValues,
  );
  const ofSets = (column: PgColumn) => sql`${column} IN (SELECT id FROM named)`;
  const reading = executePrepared<Record<'items' | 'notes' | 'images' | 'service_values' | 'processed', JsonRows>>(
    tx,
    `engine_read${variantName(has)}${variantName({ noteRows: needs.notes, services: needs.services })}`,
    () => sql`WITH named (id) AS (${named()}) SELECT
    (SELECT json_agg(json_build_object('item', ${deliveryItems}, 'scannable', ${articles.scannable}))
      FROM ${deliveryItems} JOIN ${articles} ON ${articles.id} = ${deliveryItems.articleId} WHERE ${ofSets(deliveryItems.deliveryId)}) AS items,
    ${needs.notes ? sql`(SELECT json_agg(${notes}) FROM ${notes} WHERE ${ofSets(notes.deliveryId)})` : sql`NULL`} AS notes,
    ${needs.notes ? sql`(SELECT json_agg(${attachments}) FROM ${attachments} WHERE ${ofSets(attachments.deliveryId)} AND ${attachments.kind} = 'note_image')` : sql`NULL`} AS images,
    ${needs.services ? sql`(SELECT json_agg(${deliveryServiceValues}) FROM ${deliveryServiceValues} WHERE ${ofSets(deliveryServiceValues.deliveryId)})` : sql`NULL`} AS service_values,
    (SELECT json_agg(json_build_object('event', ${processedEvents}, 'line',
        (SELECT scan_audit.delivery_item_id FROM ${scanAudit} WHERE scan_audit.client_scan_id = processed_events.event_id)))
      FROM ${processedEvents} WHERE ${inPlaceholder(processedEvents.eventId, 'eventIds')}) AS processed`,
    { ...targetValues, eventIds: arrayLiteral(eventIds) },
  );
  // The read fails whenever the lock does; the lock's error is the one that says why.
  reading.catch(() => undefined);
  const lockedRows = await lock;
  const [read] = await reading;
  const locked = fromJsonRows(
    deliveries,
    lockedRows.map((r) => r.delivery),
  ).map((delivery, i) => ({ delivery, accountId: Number(lockedRows[i].account_id) }));
  const sets = new Map<string, WorkingSet>(
    locked.map(({ delivery, accountId }) => [
      delivery.id,
      {
        accountId,
        delivery,
        deliveryDirty: false,
        loadedDelivery: '',
        items: new Map(),
        noteImages: new Map(),
        releasedImages: [],
        notes: needs.notes ? new Map() : undefined,
        serviceValues: needs.services ? new Map() : undefined,
        inserts: { audit: [], credits: [], payments: [], attachments: [], processed: [] },
      },
    ]),
  );
  const lines = (read.items ?? []) as { item: Record<string, unknown>; scannable: boolean }[];
  // A delivery created after the lock's snapshot (its rows are in the read's) has no working set: it was not locked.
  fromJsonRows(
    deliveryItems,
    lines.map((l) => l.item),
  ).forEach((row, i) => sets.get(row.deliveryId)?.items.set(row.id, { row, scannable: lines[i].scannable, dirty: false }));
  for (const row of fromJsonRows(notes, read.notes)) sets.get(row.deliveryId)?.notes!.set(row.id, { row, state: 'clean' });
  for (const image of fromJsonRows(attachments, read.images))
    if (image.noteId) sets.get(image.deliveryId)?.noteImages.set(image.noteId, image);
  for (const row of fromJsonRows(deliveryServiceValues, read.service_values))
    sets.get(row.deliveryId)?.serviceValues!.set(row.serviceId, { row, state: 'clean' });
  for (const ws of sets.values()) ws.loadedDelivery = JSON.stringify(currentDelivery(ws));
  const recorded = (read.processed ?? []) as { event: Record<string, unknown>; line: string | null }[];
  return {
    sets,
    processed: fromJsonRows(
      processedEvents,
      recorded.map((r) => r.event),
    ).map((row, i) => ({ ...row, lineId: recorded[i].line })),
  };
}

/** Another transaction recorded one of the batch's ids (a scan's also in its audit) for another delivery since we looked. */
export class ConcurrentDuplicate extends Error {}
const EVENT_ID_KEYS = new Set(['processed_events_pkey', 'scan_audit_client_scan_uq']);

const json = (rows: unknown[]) => JSON.stringify(rows);

/**
 * Writes everything the events of a batch changed, one statement per kind of change whatever the
 * number of deliveries and events, then their change records. Answers the highest change seq
 * taken per account. When the first statement is the only one (scans, the most frequent events),
 * the transaction's COMMIT goes with it: nothing may run in the transaction after this.
 */
export async function flushWorkingSets(tx: Db, sets: WorkingSet[]): Promise<Map<number, number>> {
  const all = <T>(pick: (ws: WorkingSet) => T[]) => sets.flatMap(pick);
  const changes = sets.flatMap(changesOf);

  // What every scan writes (its id, its line, its audit entry) goes in one statement, each table's
  // rows from one JSON parameter: building a statement with a parameter per value costs more than
  // the database's work for it, and each round trip counts. The change records go in the same
  // statement: one round trip fewer for every batch.
  const processed = all((ws) => ws.inserts.processed);
  const dirtyItems = all((ws) => [...ws.items.values()].filter((i) => i.dirty));
  const audit = all((ws) => ws.inserts.audit);
  const has = { items: dirtyItems.length > 0, audit: audit.length > 0, changes: changes.length > 0 };
  const values = {
    processed: json(
      processed.map((p) => ({
        event_id: p.eventId,
        type: p.type,
        client_id: p.clientId,
        account_id: p.accountId,
        delivery_id: p.deliveryId,
        occurred_at: p.occurredAt?.toISOString() ?? null,
        rejection: p.rejection ?? null,
      })),
    ),
    items: json(dirtyItems.map(({ row }) => ({ id: row.id, s: row.scannedQuantity, c: row.creditedQuantity, st: row.state }))),
    itemIds: arrayLiteral(dirtyItems.map(({ row }) => row.id)),
    audit: json(
      audit.map((a) => ({
        client_scan_id: a.clientScanId,
        delivery_id: a.deliveryId,
        delivery_item_id: a.deliveryItemId,
        action: a.action,
        quantity: a.quantity,
        reason: a.reason,
        scanned_after: a.scannedQuantityAfter,
        credited_after: a.creditedQuantityAfter,
        state_after: a.stateAfter,
        account_id: a.accountId,
        author_car_id: a.authorCarId,
        occurred_at: a.occurredAt.toISOString(),
      })),
    ),
    ...changeLogValues(changes),
  };
  const write = () =>
    executePrepared<{ account_seqs?: Record<string, number> | null }>(
      tx,
      `engine_write${variantName(has)}`,
      () => {
        const parts = [
          sql`p AS (
      INSERT INTO processed_events (event_id, type, client_id, account_id, delivery_id, occurred_at, rejection)
      SELECT * FROM jsonb_to_recordset(${sql.placeholder('processed')}::jsonb)
        AS r(event_id uuid, type text, client_id text, account_id bigint, delivery_id uuid, occurred_at timestamptz, rejection jsonb))`,
        ];
        // Each UPDATE and DELETE joined to a JSON record set also names its keys as an array: the
        // planner takes any record set for 100 rows, and for a table of some thousand rows it then
        // scans the whole table to join them; with the array it looks the few rows up by key.
        if (has.items) {
          parts.push(sql`i AS (
        UPDATE ${deliveryItems} SET scanned_quantity = v.s, credited_quantity = v.c, state = v.st, updated_at = now()
        FROM jsonb_to_recordset(${sql.placeholder('items')}::jsonb) AS v(id uuid, s int, c int, st text)
        WHERE ${deliveryItems.id} = v.id AND ${inPlaceholder(deliveryItems.id, 'itemIds')} RETURNING 1)`);
        }
        if (has.audit) {
          parts.push(sql`a AS (
        INSERT INTO scan_audit (client_scan_id, delivery_id, delivery_item_id, action, quantity, reason, scanned_quantity_after,
          credited_quantity_after, state_after, account_id, author_car_id, occurred_at)
        SELECT * FROM jsonb_to_recordset(${sql.placeholder('audit')}::jsonb)
          AS r(client_scan_id uuid, delivery_id uuid, delivery_item_id uuid, action text, quantity int, reason text, scanned_after int,
            credited_after int, state_after text, account_id bigint, author_car_id uuid, occurred_at timestamptz))`);
        }
        if (has.changes) parts.push(...changeLogAppend.parts);
        // Every part of a WITH that writes runs to completion, read or not.
        return sql`WITH ${sql.join(parts, sql`, `)}
      SELECT ${has.changes ? sql`${changeLogAppend.accountSeqs} AS account_seqs, ${changeLogAppend.notify}` : sql`NULL AS account_seqs`}`;
      },
      values,
    );
  const later = laterStatements(tx, sets, audit);
  // A copy of one of the ids, recorded meanwhile for another delivery, fails the statement (and the transaction).
  const [written] = await (later.length === 0 ? lastStatement(tx, write) : write()).catch((error: unknown) => {
    throw EVENT_ID_KEYS.has(constraintViolation(error)?.constraint ?? '') ? new ConcurrentDuplicate() : error;
  });
  for (const statement of later) await statement();
  return new Map(Object.entries(written.account_seqs ?? {}).map(([account, seq]) => [Number(account), Number(seq)]));
}

/**
 * The statements after the first, in order, for what only some events change (credits,
 * payments, notes, service values, the delivery itself): none for scans.
 */
function laterStatements(tx: Db, sets: WorkingSet[], audit: WorkingSet['inserts']['audit']): (() => PromiseLike<unknown>)[] {
  const statements: (() => PromiseLike<unknown>)[] = [];
  const credits = sets.flatMap((ws) => ws.inserts.credits);
  if (credits.length) statements.push(() => tx.insert(creditEvents).values(credits));
  const reviewed = [...audit.filter((a) => a.action === 'remove' || a.action === 'unremove'), ...credits].map((row) => row.deliveryId);
  if (reviewed.length) statements.push(() => keepReviewChange(tx, reviewed));
  const payments = sets.flatMap((ws) => ws.inserts.payments);
  if (payments.length) statements.push(() => tx.insert(paymentProtocol).values(payments));
  // A cancellation is kept for its write-back to the ERP (engine/completion/cancellationWriteBack.ts).
  const cancellations = sets.flatMap((ws) =>
    ws.inserts.processed
      .filter((p) => p.type === 'delivery.cancel' && !p.rejection)
      .map((p) => ({ deliveryId: ws.delivery.id, canceledAt: p.occurredAt!, reason: ws.delivery.stateReason ?? '' })),
  );
  if (cancellations.length) statements.push(() => tx.insert(erpCancellations).values(cancellations).onConflictDoNothing());

  const noteEntries = sets.flatMap((ws) => [...(ws.notes?.values() ?? [])]);
  const created = noteEntries.filter((n) => n.state === 'new').map((n) => n.row);
  const updated = noteEntries.filter((n) => n.state === 'dirty').map((n) => n.row);
  const deleted = noteEntries.filter((n) => n.state === 'deleted').map((n) => n.row.id);
  if (created.length) statements.push(() => tx.insert(notes).values(created));
  if (updated.length) {
    // The time set in memory is the one published in the change record, so it is the one stored.
    const values = json(updated.map((n) => ({ id: n.id, text: n.text, image: n.imageAttachment, at: n.updatedAt.toISOString() })));
    statements.push(() =>
      tx.execute(sql`
      UPDATE ${notes} SET text = v.text, image_attachment = v.image, updated_at = v.at
      FROM jsonb_to_recordset(${values}::jsonb) AS v(id uuid, text text, image text, at timestamptz)
      WHERE ${notes.id} = v.id AND ${inList(
        notes.id,
        updated.map((n) => n.id),
      )}`),
    );
  }
  const released = sets.flatMap((ws) => ws.releasedImages).map((image) => image.id);
  if (released.length) statements.push(() => tx.update(attachments).set({ noteId: null }).where(inArray(attachments.id, released)));
  if (deleted.length) statements.push(() => tx.delete(notes).where(inArray(notes.id, deleted)));
  const newAttachments = sets.flatMap((ws) => ws.inserts.attachments);
  if (newAttachments.length) statements.push(() => tx.insert(attachments).values(newAttachments));

  const valueEntries = sets.flatMap((ws) => [...(ws.serviceValues?.values() ?? [])]);
  const upserts = valueEntries.filter((v) => v.state === 'dirty').map((v) => v.row);
  const removed = valueEntries.filter((v) => v.state === 'deleted').map((v) => v.row);
  if (upserts.length) {
    statements.push(() =>
      tx
        .insert(deliveryServiceValues)
        .values(upserts)
        .onConflictDoUpdate({
          target: [deliveryServiceValues.deliveryId, deliveryServiceValues.serviceId],
          set: {
            boolValue: sql`excluded.bool_value`,
            numericValue: sql`excluded.numeric_value`,
            authorCarId: sql`excluded.author_car_id`,
            updatedAt: sql`excluded.updated_at`,
          },
        }),
    );
  }
  if (removed.length) {
    const keys = json(removed.map((v) => ({ d: v.deliveryId, s: v.serviceId })));
    statements.push(() =>
      tx.execute(sql`
      DELETE FROM ${deliveryServiceValues} USING jsonb_to_recordset(${keys}::jsonb) AS k(d uuid, s uuid)
      WHERE ${deliveryServiceValues.deliveryId} = k.d AND ${deliveryServiceValues.serviceId} = k.s
        AND ${inList(
          deliveryServiceValues.deliveryId,
          removed.map((v) => v.deliveryId),
        )}`),
    );
  }

  // Only the engine's own fields change; one statement for every delivery of the batch.
  const dirtyDeliveries = sets.filter((ws) => ws.deliveryDirty).map((ws) => ws.delivery);
  if (dirtyDeliveries.length) {
    const values = json(
      dirtyDeliveries.map((d) => ({
        id: d.id,
        state: d.state,
        reason: d.stateReason,
        car: d.assignedCarId,
        credit: d.creditAmountCents,
        credit_reason: d.creditReason,
        credit_at: d.creditUpdatedAt?.toISOString() ?? null,
        at: d.updatedAt.toISOString(),
      })),
    );
    statements.push(() =>
      tx.execute(sql`
      UPDATE ${deliveries} SET state = v.state, state_reason = v.reason, assigned_car_id = v.car, credit_amount_cents = v.credit,
        credit_reason = v.credit_reason, credit_updated_at = v.credit_at, updated_at = v.at
      FROM jsonb_to_recordset(${values}::jsonb)
        AS v(id uuid, state text, reason text, car uuid, credit int, credit_reason text, credit_at timestamptz, at timestamptz)
      WHERE ${deliveries.id} = v.id AND ${inList(
        deliveries.id,
        dirtyDeliveries.map((d) => d.id),
      )}`),
    );
  }
  return statements;
}
