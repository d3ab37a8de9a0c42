import { createHash } from 'node:crypto';
import { eq, inArray } from 'drizzle-orm';
import type { SyncEvent, EventResult } from '../../shared/schemas/sync.js';
import type { Db } from '../db/client.js';
import { cars, deliveryItems, notes, paymentMethods, paymentProtocol, processedEvents, services } from '../db/schema.js';
import type { DriverActor } from '../context.js';
import { DomainError } from '../errors.js';
import type { PaymentRow } from '../queries/shapes.js';
import { applyOperation, entityOf, type AttachmentInput, type Lookups, type Rejection } from './operations.js';
import { ConcurrentDuplicate, flushWorkingSets, loadWorkingSets } from './workingSet.js';

/** One result per event; `reason` carries the specific rejection (scan codes such as `quantity_exceeded`). */
export type EngineResult = EventResult & { reason?: string };

export interface ApplyOptions {
  /** The pushing device's id, kept with every processed event. */
  clientId?: string;
  /** For an uploaded note image: the attachment to record with the `note.create` event. */
  attachment?: AttachmentInput;
}

/** The payload an event id stands for; a reused id with another payload is a conflict, not a duplicate. */
export function payloadHash(event: SyncEvent): string {
  const { eventId: _id, occurredAt: _at, ...payload } = event;
  const canonical = JSON.stringify(payload, Object.keys(payload).sort());
  return createHash('sha256').update(canonical).digest('base64url');
}

const rejection = (event: SyncEvent, r: Rejection): EngineResult => ({ eventId: event.eventId, status: 'rejected', code: r.code, reason: r.reason, message: r.message });
const notFound = (event: SyncEvent, what: string) => rejection(event, { code: 'not_found', reason: 'not_found', message: `${what} not found` });
const conflictResult = (event: SyncEvent) => rejection(event, { code: 'conflict', reason: 'conflict', message: 'This event id was already used for another event' });

/**
 * Applies events of one actor in order: each event all-or-nothing under a row lock on its
 * delivery, recorded once by its id, with audit and change-log records. Events are grouped by
 * delivery (order kept within a delivery), validated one by one in memory with the shared rules,
 * and the whole batch is written with one statement per table. A rejection never stops the
 * events after it.
 */
export async function applyEvents(db: Db, actor: DriverActor, events: SyncEvent[], options: ApplyOptions = {}): Promise<EngineResult[]> {
  const results: (EngineResult | undefined)[] = new Array(events.length);
  // Ids repeated inside one batch: the first copy counts, the others are answered after it.
  const firstIndex = new Map<string, number>();
  events.forEach((e, i) => { if (!firstIndex.has(e.eventId)) firstIndex.set(e.eventId, i); });

  const groups = await groupByDelivery(db, actor, events, firstIndex, results);
  const lookups = await loadLookups(db, actor, events);
  await applyBatch(db, actor, [...groups.entries()], lookups, options, results, events);

  for (const [i, event] of events.entries()) {
    const first = firstIndex.get(event.eventId)!;
    if (first !== i) {
      const original = results[first]!;
      results[i] = payloadHash(events[first]) !== payloadHash(event) ? conflictResult(event)
        : original.status === 'applied' ? { eventId: event.eventId, status: 'duplicate', entity: original.entity } : original;
    }
  }
  return results as EngineResult[];
}

/** Applies one event for a REST call: returns the touched entity, or throws the rejection as a DomainError. */
export async function applyEvent(db: Db, actor: DriverActor, event: SyncEvent, options: Pick<ApplyOptions, 'attachment'> = {}): Promise<unknown> {
  const [result] = await applyEvents(db, actor, [event], options);
  if (result.status === 'rejected') throw new DomainError(result.code as Rejection['code'], result.message ?? 'Rejected');
  return result.entity;
}

/**
 * Finds each event's delivery. An event without one is answered here: a known id (a note deleted
 * by this very event) is a duplicate, anything else not found. Known ids of events that have a
 * delivery are recognised under that delivery's lock.
 */
async function groupByDelivery(db: Db, actor: DriverActor, events: SyncEvent[], firstIndex: Map<string, number>, results: (EngineResult | undefined)[]) {
  const itemIds = events.flatMap((e) => (e.type === 'scan' ? [e.deliveryItemId] : []));
  const noteIds = events.flatMap((e) => (e.type === 'note.update' || e.type === 'note.delete' ? [e.noteId] : []));
  const itemRows = itemIds.length ? await db.select({ id: deliveryItems.id, deliveryId: deliveryItems.deliveryId }).from(deliveryItems).where(inArray(deliveryItems.id, itemIds)) : [];
  const noteRows = noteIds.length ? await db.select({ id: notes.id, deliveryId: notes.deliveryId }).from(notes).where(inArray(notes.id, noteIds)) : [];
  const itemDelivery = new Map(itemRows.map((r) => [r.id, r.deliveryId]));
  const noteDelivery = new Map(noteRows.map((r) => [r.id, r.deliveryId]));
  for (const e of events) if (e.type === 'note.create') noteDelivery.set(e.noteId, noteDelivery.get(e.noteId) ?? e.deliveryId);

  const groups = new Map<string, number[]>();
  const orphans: number[] = [];
  events.forEach((event, i) => {
    if (firstIndex.get(event.eventId) !== i) return;
    const target = event.type === 'scan' ? itemDelivery.get(event.deliveryItemId)
      : event.type === 'note.update' || event.type === 'note.delete' ? noteDelivery.get(event.noteId) ?? event.deliveryId
        : event.deliveryId;
    if (target) groups.set(target, [...(groups.get(target) ?? []), i]);
    else orphans.push(i);
  });
  if (orphans.length) {
    const seen = await db.select().from(processedEvents).where(inArray(processedEvents.eventId, orphans.map((i) => events[i].eventId)));
    const seenById = new Map(seen.map((p) => [p.eventId, p]));
    for (const i of orphans) {
      const event = events[i];
      const known = seenById.get(event.eventId);
      results[i] = !known ? notFound(event, event.type === 'scan' ? 'Delivery item' : 'Note')
        : known.accountId === actor.personalnummer && known.payloadHash === payloadHash(event) ? { eventId: event.eventId, status: 'duplicate', entity: null }
          : conflictResult(event);
    }
  }
  return groups;
}

async function loadLookups(db: Db, actor: DriverActor, events: SyncEvent[]): Promise<Lookups> {
  const serviceIds = events.flatMap((e) => (e.type === 'service.set' || e.type === 'service.clear' ? [e.serviceId] : []));
  const methodIds = events.flatMap((e) => (e.type === 'payment' ? [e.paymentMethodId] : []));
  const usesCars = events.some((e) => ('authorCarId' in e && e.authorCarId) || (e.type === 'delivery.assignCar' && e.carId));
  const [carRows, serviceRows, methodRows] = await Promise.all([
    usesCars ? db.select().from(cars).where(eq(cars.accountId, actor.personalnummer)) : [],
    serviceIds.length ? db.select().from(services).where(inArray(services.id, serviceIds)) : [],
    methodIds.length ? db.select().from(paymentMethods).where(inArray(paymentMethods.id, methodIds)) : [],
  ]);
  return {
    cars: new Map(carRows.map((c) => [c.id, c])),
    services: new Map(serviceRows.map((s) => [s.id, s])),
    paymentMethods: new Map(methodRows.map((m) => [m.id, m])),
  };
}

type Work = [deliveryId: string, indexes: number[]][];

/**
 * The whole batch in one transaction. If that transaction fails as a whole (a concurrent copy of
 * an id on another delivery, a database error), each delivery, and then each event, gets a
 * transaction of its own, so that one bad event cannot take the others with it.
 */
async function applyBatch(
  db: Db, actor: DriverActor, work: Work, lookups: Lookups, options: ApplyOptions,
  results: (EngineResult | undefined)[], events: SyncEvent[],
) {
  if (work.length === 0) return;
  try {
    await applyInTransaction(db, actor, work, lookups, options, results, events);
    return;
  } catch (error) {
    const single = work.length === 1 && work[0][1].length === 1;
    if (single && !(error instanceof ConcurrentDuplicate)) throw error;
    if (single) {
      results[work[0][1][0]] = conflictResult(events[work[0][1][0]]);
      return;
    }
  }
  const smaller: Work[] = work.length > 1 ? work.map((group) => [group]) : work[0][1].map((i) => [[work[0][0], [i]]]);
  for (const part of smaller) await applyBatch(db, actor, part, lookups, options, results, events);
}

async function applyInTransaction(
  db: Db, actor: DriverActor, work: Work, lookups: Lookups, options: ApplyOptions,
  results: (EngineResult | undefined)[], events: SyncEvent[],
) {
  const batch = work.flatMap(([, indexes]) => indexes.map((i) => events[i]));
  const needs = {
    notes: batch.some((e) => e.type.startsWith('note.') || (e.type === 'scan' && e.action === 'unremove')),
    services: batch.some((e) => e.type.startsWith('service.')),
  };
  const staged = await db.transaction(async (tx) => {
    const sets = await loadWorkingSets(tx, work.map(([deliveryId]) => deliveryId), actor.personalnummer, needs);
    // Read again under the locks: a copy of the same event may have committed since the first look.
    const processed = await tx.select().from(processedEvents).where(inArray(processedEvents.eventId, batch.map((e) => e.eventId)));
    const processedById = new Map(processed.map((p) => [p.eventId, p]));
    const duplicatePayments = batch.filter((e) => e.type === 'payment' && processedById.has(e.eventId)).map((e) => e.eventId);
    const paymentRows: PaymentRow[] = duplicatePayments.length
      ? await tx.select().from(paymentProtocol).where(inArray(paymentProtocol.clientEventId, duplicatePayments))
      : [];
    const out = new Map<number, EngineResult>();
    for (const [deliveryId, indexes] of work) {
      const ws = sets.get(deliveryId);
      for (const i of indexes) {
        const event = events[i];
        if (!ws) {
          out.set(i, notFound(event, event.type === 'scan' ? 'Delivery item' : 'Delivery'));
          continue;
        }
        const seen = processedById.get(event.eventId);
        if (seen) {
          out.set(i, seen.payloadHash === payloadHash(event) && seen.accountId === actor.personalnummer
            ? { eventId: event.eventId, status: 'duplicate', entity: entityOf(ws, event, paymentRows.find((p) => p.clientEventId === event.eventId)) }
            : conflictResult(event));
          continue;
        }
        const outcome = applyOperation({ ws, lookups, occurredAt: new Date(event.occurredAt), attachment: options.attachment }, event);
        if (!outcome.ok) {
          out.set(i, rejection(event, outcome.rejection));
          continue;
        }
        ws.inserts.processed.push({
          eventId: event.eventId, type: event.type, clientId: options.clientId ?? null, accountId: actor.personalnummer,
          deliveryId, payloadHash: payloadHash(event), occurredAt: new Date(event.occurredAt),
        });
        out.set(i, { eventId: event.eventId, status: 'applied', entity: outcome.entity });
      }
    }
    const changed = [...sets.values()].filter((ws) => ws.inserts.processed.length > 0);
    if (changed.length > 0) await flushWorkingSets(tx, changed);
    return out;
  });
  for (const [i, result] of staged) results[i] = result;
}
