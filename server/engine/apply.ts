import type { SyncEvent, EventResult } from '../../shared/schemas/sync.js';
import type { Db } from '../db/client.js';
import type { DriverActor } from '../context.js';

/** One result per event; `reason` carries the specific rejection (scan codes such as `quantity_exceeded`). */
export type EngineResult = EventResult & { reason?: string };

export interface ApplyOptions {
  /** The pushing device's id, kept with every processed event. */
  clientId?: string;
}

/**
 * Applies events of one actor in order: each event all-or-nothing under a row lock on its
 * delivery, recorded once by its id, with audit and change-log records. A rejection never
 * stops the events after it.
 */
export async function applyEvents(_db: Db, _actor: DriverActor, _events: SyncEvent[], _options: ApplyOptions = {}): Promise<EngineResult[]> {
  throw new Error('engine not implemented yet');
}

/** Applies one event for a REST call: returns the touched entity, or throws the rejection as a DomainError. */
export async function applyEvent(_db: Db, _actor: DriverActor, _event: SyncEvent): Promise<unknown> {
  throw new Error('engine not implemented yet');
}
