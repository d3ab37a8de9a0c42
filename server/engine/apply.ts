import { isRefusal } from '../../shared/rules/eventResults.js';
import type { SyncEvent, EventResult } from '../../shared/schemas/sync.js';
import type { Db } from '../db/client.js';
import type { DriverActor } from '../context.js';
import { DomainError, unauthorized, validation } from '../errors.js';
import type { AttachmentInput, Rejection } from './operations.js';
import { submit } from './writer.js';

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
export interface Entry {
  event: SyncEvent;
  actor: DriverActor;
  options: ApplyOptions;
  result?: EngineResult;
  /** Its account, read in the transaction, is missing or deactivated. */
  refused?: boolean;
}

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
