import { inArray, sql } from 'drizzle-orm';
import { isRefusal } from '../../shared/rules/eventResults.js';
import type { SyncEvent, SyncEventOf } from '../../shared/schemas/sync.js';
import { executePrepared, GENERIC_PLANS, setLocal, type Db } from '../db/client.js';
import { arrayLiteral, inPlaceholder } from '../db/jsonRows.js';
import { accounts, paymentProtocol } from '../db/schema.js';
import type { PaymentRow } from '../shapes/rows.js';
import type { EngineResult, Entry } from './apply.js';
import { loadLookups } from './lookups.js';
import { applyOperation, entityOf, type Outcome } from './operations.js';
import { flushWorkingSets, loadWorkingSets, type WorkingSet } from './workingSet.js';

/**
 * A refusal; or, given the current state, the answer to a copy of a refused event: a `duplicate`
 * (an id seen before) that still tells its sender why (see `isRefusal`).
 */
export const refusal = (
  event: SyncEvent,
  { code, reason, message, errors }: Pick<EngineResult, 'code' | 'reason' | 'message' | 'errors'>,
  copy?: { entity: EngineResult['entity'] },
): EngineResult => ({
  eventId: event.eventId,
  status: copy ? 'duplicate' : 'rejected',
  code,
  reason,
  message,
  ...(errors && { errors }),
  ...copy,
});
/** A copy whose id stands for another event: nothing of what it names was touched under that id. */
const reusedId = (event: SyncEvent): EngineResult => ({
  eventId: event.eventId,
  status: 'duplicate',
  entity: null,
  reason: 'other_event',
  message: 'This id was already used for another event',
});
/** Named by what the event addresses, whatever stood in the way: a foreign note reads like a missing one. */
const notFound = (event: SyncEvent) => {
  const what = event.type === 'scan' ? 'Delivery item' : event.type === 'note.update' || event.type === 'note.delete' ? 'Note' : 'Delivery';
  return refusal(event, { code: 'not_found', reason: 'not_found', message: `${what} not found` });
};

/**
 * An event older than the deduplication window: its id may have been forgotten, so it could be a
 * copy of an event applied long ago. Refused (and recorded as refused), never applied twice.
 */
const tooOld = (since: Date): Outcome => ({
  ok: false,
  rejection: {
    code: 'validation',
    reason: 'event_too_old',
    message: 'The event is older than the service remembers event ids; it cannot be told from a copy',
    errors: [{ path: 'occurredAt', message: `before ${since.toISOString()}, the start of the deduplication window` }],
  },
});

/**
 * The delivery each event is about: a line's or a note's as found under the locks, a note's that
 * an earlier event of the batch creates, else the one the event names; none for a note the event
 * names under another delivery than its own.
 */
function deliveryFinder(sets: Map<string, WorkingSet>, events: SyncEvent[]): (event: SyncEvent) => string | undefined {
  const lineDelivery = new Map<string, string>();
  const noteDelivery = new Map<string, string>();
  for (const [deliveryId, ws] of sets) {
    for (const itemId of ws.items.keys()) lineDelivery.set(itemId, deliveryId);
    for (const noteId of ws.notes?.keys() ?? []) noteDelivery.set(noteId, deliveryId);
  }
  for (const e of events) if (e.type === 'note.create' && !noteDelivery.has(e.noteId)) noteDelivery.set(e.noteId, e.deliveryId);
  const noteOn = (event: SyncEventOf<'note.update' | 'note.delete'>) => {
    const own = noteDelivery.get(event.noteId);
    return own && event.deliveryId && own !== event.deliveryId ? undefined : (own ?? event.deliveryId);
  };
  return (event) =>
    event.type === 'scan'
      ? lineDelivery.get(event.deliveryItemId)
      : event.type === 'note.update' || event.type === 'note.delete'
        ? noteOn(event)
        : event.deliveryId;
}

/** The id an event names directly: a scan's line, a note event's note, else its delivery. */
const targetOf = (event: SyncEvent): string | undefined =>
  event.type === 'scan'
    ? event.deliveryItemId
    : event.type === 'note.update' || event.type === 'note.delete'
      ? event.noteId
      : event.deliveryId;

/**
 * One transaction for the work: locks and reads the deliveries' working sets, decides each event
 * with the shared rules in memory (copies answered from what their id recorded), and writes with
 * one statement per table.
 */
export async function applyInTransaction(db: Db, work: Entry[], lockWaitMs?: number) {
  // Ids a sender repeats in the work: the first copy counts, the others are answered after the
  // work with the state it left, as a copy arriving later would be. Two senders' copies both go
  // in: if both record the id, the write finds it taken and the events go apart (applyBatch).
  const copyKey = (entry: Entry) => `${entry.event.eventId} ${entry.actor.personalnummer}`;
  const firstOf = new Map<string, Entry>();
  for (const entry of work) if (!firstOf.has(copyKey(entry))) firstOf.set(copyKey(entry), entry);
  const entries = [...firstOf.values()];
  const events = entries.map((e) => e.event);
  const needs = {
    notes: events.some((e) => e.type.startsWith('note.') || (e.type === 'scan' && e.action === 'unremove')),
    services: events.some((e) => e.type.startsWith('service.')),
  };
  const targets = {
    deliveryIds: events.flatMap((e) => (e.type !== 'scan' && e.deliveryId ? [e.deliveryId] : [])),
    itemIds: events.flatMap((e) => (e.type === 'scan' ? [e.deliveryItemId] : [])),
    noteIds: events.flatMap((e) => (e.type === 'note.update' || e.type === 'note.delete' ? [e.noteId] : [])),
  };
  const staged = await db.transaction(async (tx) => {
    void setLocal(tx, lockWaitMs === undefined ? GENERIC_PLANS : { ...GENERIC_PLANS, lock_timeout: `${lockWaitMs}ms` });
    const loading = loadWorkingSets(
      tx,
      targets,
      needs,
      events.map((e) => e.eventId),
    );
    const reading = activeAccounts(tx, entries);
    const { sets, processed } = await loading;
    const active = await reading;
    // An actor whose account is unread (a push authenticates by its token alone) applies nothing
    // unless the account exists and is active; its request then fails with 401.
    const refused = new Set(entries.filter((e) => e.actor.accountUnread && !active.has(e.actor.personalnummer)));
    const lookups = await loadLookups(tx, entries);
    const processedById = new Map(processed.map((p) => [p.eventId, p]));
    const deliveryOf = deliveryFinder(sets, events);
    // A delivery of another account is not there for the event, as if it did not exist.
    const ownSet = (deliveryId: string | undefined, accountId: number) => {
      const ws = deliveryId ? sets.get(deliveryId) : undefined;
      return ws?.accountId === accountId ? ws : undefined;
    };
    const duplicatePayments = events.filter((e) => e.type === 'payment' && processedById.has(e.eventId)).map((e) => e.eventId);
    const paymentRows: PaymentRow[] = duplicatePayments.length
      ? await tx.select().from(paymentProtocol).where(inArray(paymentProtocol.clientEventId, duplicatePayments))
      : [];
    const out = new Map<Entry, EngineResult>();
    for (const entry of entries) {
      if (refused.has(entry)) continue;
      const { event } = entry;
      const accountId = entry.actor.personalnummer;
      const seen = processedById.get(event.eventId);
      const deliveryId = deliveryOf(event);
      const ws = deliveryId ? ownSet(deliveryId, accountId) : undefined;
      if (seen && seen.accountId === accountId) {
        // Whatever the copy carries, the id stands for the event recorded under it. Also when the
        // delivery has moved to another driver since, or the event deleted its note: the sender's
        // outbox must not take it for refused. What it touched may no longer be theirs to see; a
        // copy of another kind or on another delivery is another event, and one naming another
        // line of the delivery is answered with the line the recorded scan counted.
        const recorded = event.type === 'scan' ? { ...event, deliveryItemId: seen.lineId ?? event.deliveryItemId } : event;
        // A copy naming nothing that exists (a deleted note) contradicts nothing: its own resend.
        const sameEvent = seen.type === event.type && (deliveryId === undefined || seen.deliveryId === deliveryId);
        const entity = ws
          ? entityOf(
              ws,
              recorded,
              paymentRows.find((p) => p.clientEventId === event.eventId),
            )
          : null;
        out.set(
          entry,
          !sameEvent
            ? reusedId(event)
            : seen.rejection
              ? refusal(event, seen.rejection, { entity })
              : { eventId: event.eventId, status: 'duplicate', entity },
        );
        continue;
      }
      if (!deliveryId || !ws) {
        out.set(entry, notFound(event));
        continue;
      }
      if (seen) {
        // Another account recorded this id: it stands for their event, never for this one.
        out.set(entry, reusedId(event));
        continue;
      }
      const { acceptedSince } = entry.options;
      const outcome =
        acceptedSince && new Date(event.occurredAt) < acceptedSince
          ? tooOld(acceptedSince)
          : applyOperation(
              { ws, lookups: lookups(accountId), occurredAt: new Date(event.occurredAt), attachment: entry.options.attachment },
              event,
            );
      const result: EngineResult = outcome.ok
        ? { eventId: event.eventId, status: 'applied', entity: outcome.entity }
        : refusal(event, outcome.rejection);
      // A refusal is as final for the id as an application: a resend (after a lost answer, say)
      // must not apply it in a state that later events of its batch made.
      ws.inserts.processed.push({
        eventId: event.eventId,
        type: event.type,
        clientId: entry.options.clientId ?? null,
        accountId,
        deliveryId,
        occurredAt: new Date(event.occurredAt),
        rejection: outcome.ok ? null : outcome.rejection,
      });
      out.set(entry, result);
    }
    for (const entry of work) {
      const first = firstOf.get(copyKey(entry))!;
      if (first === entry) continue;
      if (refused.has(first)) {
        refused.add(entry);
        continue;
      }
      const original = out.get(first)!;
      const ws = ownSet(deliveryOf(first.event), entry.actor.personalnummer);
      const payment =
        paymentRows.find((p) => p.clientEventId === first.event.eventId) ??
        (ws?.inserts.payments.find((p) => p.clientEventId === first.event.eventId) as PaymentRow | undefined);
      // The copy's own targets are not read: where its first copy found no delivery, it is the same
      // event only if it names the same thing (else one naming a line that exists would pass for it).
      const delivery = deliveryOf(first.event);
      const sameEvent =
        entry.event.type === first.event.type &&
        deliveryOf(entry.event) === delivery &&
        (delivery !== undefined || targetOf(entry.event) === targetOf(first.event));
      const entity = ws ? entityOf(ws, first.event, payment) : original.entity;
      out.set(
        entry,
        !sameEvent
          ? reusedId(entry.event)
          : isRefusal(original)
            ? refusal(entry.event, original, { entity: entity ?? null })
            : { eventId: entry.event.eventId, status: 'duplicate', entity },
      );
    }
    const changed = [...sets.values()].filter((ws) => ws.inserts.processed.length > 0);
    const seqs = changed.length > 0 ? await flushWorkingSets(tx, changed) : new Map<number, number>();
    // Applied now: the seq up to which the sender's change feed carries what the event did.
    for (const [entry, result] of out) {
      const seq = seqs.get(entry.actor.personalnummer);
      if (result.status === 'applied' && seq !== undefined) out.set(entry, { ...result, seq });
    }
    return { out, refused };
  });
  for (const [entry, result] of staged.out) entry.result = result;
  for (const entry of staged.refused) entry.refused = true;
}

/**
 * Which accounts of the entries whose account is unread exist and are active. Sent right after
 * the lock and the read (the connection pipelines them), it costs no round trip of its own, and
 * it reads the accounts once the locks are held.
 */
function activeAccounts(tx: Db, entries: Entry[]): Promise<Set<number>> {
  const unread = entries.filter((e) => e.actor.accountUnread).map((e) => e.actor.personalnummer);
  if (unread.length === 0) return Promise.resolve(new Set());
  const reading = executePrepared<{ personalnummer: number }>(
    tx,
    'engine_active_accounts',
    () =>
      sql`SELECT ${accounts.personalnummer} AS personalnummer FROM ${accounts}
        WHERE ${inPlaceholder(accounts.personalnummer, 'numbers')} AND ${accounts.active}`,
    { numbers: arrayLiteral(unread) },
  ).then((rows) => new Set(rows.map((r) => Number(r.personalnummer))));
  // It fails whenever the lock before it does; the lock's error is the one that says why.
  reading.catch(() => undefined);
  return reading;
}
