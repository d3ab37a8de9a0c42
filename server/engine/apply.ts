import { inArray, sql } from 'drizzle-orm';
import { isRefusal } from '../../shared/rules/eventResults.js';
import type { SyncEvent, SyncEventOf, EventResult } from '../../shared/schemas/sync.js';
import { executePrepared, GENERIC_PLANS, setLocal, type Db } from '../db/client.js';
import { combining, deferred } from '../db/combining.js';
import { isDatabaseUnavailable } from '../db/availability.js';
import { constraintViolation, isLockTimeout } from '../db/errors.js';
import { arrayLiteral, inPlaceholder } from '../db/jsonRows.js';
import { accounts, paymentProtocol } from '../db/schema.js';
import type { DriverActor } from '../context.js';
import { DomainError, unauthorized, validation } from '../errors.js';
import type { PaymentRow } from '../shapes/rows.js';
import { loadLookups } from './lookups.js';
import { applyOperation, entityOf, type AttachmentInput, type Outcome, type Rejection } from './operations.js';
import { ConcurrentDuplicate, flushWorkingSets, loadWorkingSets, type WorkingSet } from './workingSet.js';

/** One result per event; `reason` carries the specific rejection (scan codes such as `quantity_exceeded`). */
export type EngineResult = EventResult & { reason?: string };

export interface ApplyOptions {
  /** The pushing device's id, kept with every processed event. */
  clientId?: string;
  /** For an uploaded note image: the attachment to record with the `note.create` event. */
  attachment?: AttachmentInput;
  /** The deduplication window's start (`eventWindowStart`): an event that occurred before it is refused. */
  acceptedSince?: Date;
  /** Told each event's result (metrics). */
  onResult?: (event: SyncEvent, result: EngineResult) => void;
  /** Told once the events are written: how long they waited for the writer and how long its run took (metrics). */
  onWrite?: (timing: WriteTiming) => void;
}

/** Where a request's write spent its time, in seconds. */
export interface WriteTiming {
  /** Queued for the writer, behind the runs before its own. */
  waited: number;
  /**
   * The run that carried it, with the requests combined with it: from its start until it had
   * answered them, or handed those that met a lock on to wait in the patient lane.
   */
  ran: number;
}

/** One event of one request, with whom it comes from and, once decided, its result. */
interface Entry {
  event: SyncEvent;
  actor: DriverActor;
  options: ApplyOptions;
  result?: EngineResult;
  /** Its account, read in the transaction, is missing or deactivated. */
  refused?: boolean;
}

/**
 * A refusal; or, given the current state, the answer to a copy of a refused event: a `duplicate`
 * (an id seen before) that still tells its sender why (see `isRefusal`).
 */
const refusal = (
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
 * Applies events of one actor in order: each event all-or-nothing under a row lock on its
 * delivery, recorded once by its id, with audit and change-log records. Events are grouped by
 * delivery (order kept within a delivery), validated one by one in memory with the shared rules,
 * and written with one statement per table. A rejection never stops the events after it.
 */
export async function applyEvents(db: Db, actor: DriverActor, events: SyncEvent[], options: ApplyOptions = {}): Promise<EngineResult[]> {
  const entries: Entry[] = events.map((event) => ({ event, actor, options }));
  await submit(db, entries, options.onWrite);
  if (entries.some((e) => e.refused)) throw unauthorized();
  for (const e of entries) options.onResult?.(e.event, e.result!);
  return entries.map((e) => e.result!);
}

/** Applies one event for a REST call: returns the touched entity, or throws the rejection as a DomainError. */
export async function applyEvent(
  db: Db,
  actor: DriverActor,
  event: SyncEvent,
  options: Pick<ApplyOptions, 'attachment' | 'onResult' | 'onWrite'> = {},
): Promise<unknown> {
  const [result] = await applyEvents(db, actor, [event], options);
  if (isRefusal(result)) {
    // A copy of a refused event: the id is spent, so a corrected request needs a new one.
    const spent =
      result.status === 'duplicate'
        ? [{ path: 'clientEventId', message: 'refused before under this id; a corrected request needs a new id' }]
        : [];
    throw new DomainError(result.code as Rejection['code'], result.message ?? 'Rejected', [...(result.errors ?? []), ...spent]);
  }
  // Over REST only a credit's, a payment's and a note image's id is the client's.
  if (result.reason === 'other_event') {
    throw validation('This clientEventId was already used for another event', [
      { path: 'clientEventId', message: 'already used for another event' },
    ]);
  }
  // A repeat that shows nothing is the caller's own event on a delivery that has moved to another driver.
  if (result.status === 'duplicate' && result.entity === null && (event.type === 'credit' || event.type === 'payment')) {
    throw new DomainError('not_found', 'Delivery not found');
  }
  return result.entity;
}

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

/** Neither answered nor refused by a transaction that committed. */
const unanswered = (entry: Entry) => !entry.result && !entry.refused;

interface Request {
  entries: Entry[];
  done: ReturnType<typeof deferred<void>>;
  /** performance.now() when it was queued. */
  queuedAt: number;
  onWrite: ApplyOptions['onWrite'];
}

/** How long requests that go together wait for a row lock before each is tried alone. */
const COMBINED_LOCK_WAIT_MS = 100;
/** After this long, a run (waiting for a lock, say) no longer holds the writer: another may start. */
const SLOW_RUN_MS = 50;
/**
 * Runs start at least this far apart. At hundreds of pushes a second a run then carries three
 * requests rather than two or one, which saves PostgreSQL about a tenth of its CPU per push; a
 * quiet service starts each push at once. A longer interval saves more, but every push under
 * load waits longer for it (measured in 5e35a1a).
 */
const RUN_INTERVAL_MS = 8;

/**
 * One writer: requests that arrive while it is busy are combined into one transaction, so under
 * many small concurrent pushes a handful of statements carries many requests (a second writer
 * combined less and cost PostgreSQL a fifth more CPU per push, measured in 61be886). At most 16
 * go together: a wave of small pushes then goes in several short transactions, whose first
 * answers need not wait for the last requests' writes; a cap on events instead would keep large
 * batches from ever going together (measured in the commit history). A failure of the
 * combined work leaves each request to fail or succeed on its own.
 *
 * A delivery locked elsewhere (a long transaction, another instance) must not hold up other
 * drivers' pushes. A request that goes alone waits for its locks in order, but after
 * SLOW_RUN_MS it stops holding the writer and the next run starts beside it. Requests that go
 * together wait for a lock only briefly (COMBINED_LOCK_WAIT_MS); after a lock timeout each is
 * tried alone, briefly again, and one that still meets the lock waits in the patient lane, up to
 * the session's lock timeout.
 */
function createWriter(db: Db) {
  const patient = combining<Request>({ concurrency: 4, maxItems: 1 }, async ([r]) => {
    await applyBatch(db, r.entries.filter(unanswered)).then(r.done.resolve, r.done.reject);
  });
  const options = {
    concurrency: 1,
    maxItems: 16,
    maxWeight: 2000,
    weight: (r: Request) => r.entries.length,
    slowAfterMs: SLOW_RUN_MS,
    minIntervalMs: RUN_INTERVAL_MS,
  };
  const run = async (requests: Request[]) => {
    if (requests.length === 1) {
      await applyBatch(db, requests[0].entries).then(requests[0].done.resolve, requests[0].done.reject);
      return;
    }
    try {
      await applyBatch(
        db,
        requests.flatMap((r) => r.entries),
        COMBINED_LOCK_WAIT_MS,
      );
      for (const r of requests) r.done.resolve();
      return;
    } catch {
      // Each on its own below.
    }
    for (const r of requests) {
      // Entries answered by a transaction that committed keep that answer.
      await applyBatch(db, r.entries.filter(unanswered), COMBINED_LOCK_WAIT_MS).then(r.done.resolve, (error: unknown) =>
        isLockTimeout(error) ? patient(r) : r.done.reject(error),
      );
    }
  };
  return combining<Request>(options, async (requests) => {
    const started = performance.now();
    await run(requests);
    const ran = (performance.now() - started) / 1000;
    for (const r of requests) r.onWrite?.({ waited: (started - r.queuedAt) / 1000, ran });
  });
}

const writers = new WeakMap<Db, ReturnType<typeof createWriter>>();

function submit(db: Db, entries: Entry[], onWrite: ApplyOptions['onWrite']): Promise<void> {
  let write = writers.get(db);
  if (!write) {
    write = createWriter(db);
    writers.set(db, write);
  }
  const done = deferred<void>();
  write({ entries, done, queuedAt: performance.now(), onWrite });
  return done.promise;
}

/**
 * The whole work in one transaction. If that transaction fails as a whole (a concurrent copy of
 * an id on another delivery, a database error), each half of the events, in order, gets a
 * transaction of its own, and so on down to single events, so that one bad event cannot take the
 * others with it.
 */
async function applyBatch(db: Db, entries: Entry[], lockWaitMs?: number) {
  if (entries.length === 0) return;
  try {
    await applyInTransaction(db, entries, lockWaitMs);
    return;
  } catch (error) {
    // Not the events' fault: splitting them would only try the database again and again.
    if (isDatabaseUnavailable(error)) throw error;
    const violation = constraintViolation(error)?.kind;
    if (entries.length > 1) {
      const half = Math.ceil(entries.length / 2);
      await applyBatch(db, entries.slice(0, half), lockWaitMs);
      await applyBatch(db, entries.slice(half), lockWaitMs);
    } else if (error instanceof ConcurrentDuplicate) {
      // Its id committed meanwhile with another delivery's event: afresh, the event finds it recorded.
      await applyInTransaction(db, entries, lockWaitMs);
    } else if (violation === 'unique') {
      // An id the client chose (a note's) is taken by a row this event cannot see: another delivery's.
      entries[0].result = refusal(entries[0].event, {
        code: 'conflict',
        reason: 'conflict',
        message: 'An id this event brings is already taken',
      });
    } else if (violation === 'foreign_key') {
      // A payment method or service looked up in the transaction was deleted before its write.
      entries[0].result = refusal(entries[0].event, {
        code: 'not_found',
        reason: 'not_found',
        message: 'A payment method or service the event names was deleted meanwhile',
      });
    } else {
      throw error;
    }
  }
}

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

async function applyInTransaction(db: Db, work: Entry[], lockWaitMs?: number) {
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
