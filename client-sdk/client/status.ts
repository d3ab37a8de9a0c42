import type { LiveChanges } from '../live.js';
import type { OutboxAction, OutboxEntry, Refusal } from '../outbox.js';
import type { SetAside } from '../storage/keyValue.js';
import { NetworkError, ProblemError } from '../problem.js';
import type { ClientCore } from './core.js';
import { isOutOfReach, isTooOld } from './verdicts.js';

export interface RejectedEvent {
  id: string;
  type: string;
  deliveryId: string | null;
  code: string;
  message: string;
  /** The specific cause when the service gives one (for scans: quantity_exceeded, item_removed, ...). */
  reason?: string;
  /** The fields of the action that broke a rule, when the service names them. */
  errors?: Refusal['errors'];
  rejectedAt: number;
  action: OutboxAction;
}

export interface SyncStatus {
  pendingCount: number;
  /** Time the oldest unsent action has waited, 0 when nothing waits. */
  oldestPendingAgeMs: number;
  oldestPendingAt: number | null;
  rejected: RejectedEvent[];
  online: boolean;
  liveConnected: boolean;
  lastSyncAt: number | null;
  lastError: { message: string; code?: string; status?: number; at: number } | null;
  nextRetryAt: number | null;
  /** Stored values that could not be read when the client opened, moved to `corrupt/<key>` (see README). */
  setAside: SetAside[];
  /** The service refused a freshly refreshed token: nothing is sent until the driver signs in again and the app calls `resume()`. */
  needsSignIn: boolean;
  /**
   * The service no longer serves this release of the SDK (426 `client_too_old`): nothing is sent,
   * the outbox stays, and the app should ask the driver to update; the updated app sends it all.
   */
  needsUpdate: boolean;
  /** The oldest release the service serves, when it said so. */
  minimumVersion: string | null;
}

/** What the app shows the driver about syncing: what waits, what was refused, whether the service answers. */
export class Status {
  /** True only once the service answered: right after `open()` nothing has yet. */
  online = false;
  /** Called whenever the service answers (the sender sends what waited for the network). */
  onAnswered: () => void = () => {};
  lastSyncAt: number | null = null;
  /** When a push, and a pull or live message, last came back (the device's health report). */
  lastPushAt: number | null = null;
  lastPullAt: number | null = null;
  lastError: SyncStatus['lastError'] = null;
  nextRetryAt: number | null = null;
  needsSignIn = false;
  needsUpdate = false;
  minimumVersion: string | null = null;

  constructor(
    private readonly core: ClientCore,
    private readonly live: LiveChanges,
  ) {
    core.emitStatus = () => core.events.emit('status', this.current());
  }

  current(): SyncStatus {
    const pending = this.core.outbox.pending();
    const oldest = pending.length ? Math.min(...pending.map((e) => e.createdAt)) : null;
    return {
      pendingCount: pending.length,
      oldestPendingAt: oldest,
      oldestPendingAgeMs: oldest === null ? 0 : Math.max(0, this.core.now() - oldest),
      rejected: this.rejected(),
      online: this.online,
      liveConnected: this.live.connected,
      lastSyncAt: this.lastSyncAt,
      lastError: this.lastError,
      nextRetryAt: this.nextRetryAt,
      needsSignIn: this.needsSignIn,
      needsUpdate: this.needsUpdate,
      minimumVersion: this.minimumVersion,
      setAside: this.core.store.setAside,
    };
  }

  rejected(): RejectedEvent[] {
    return this.core.outbox.rejected().map((entry) => toRejected(entry, this.core));
  }

  /** The service answered: it is reachable, and the last error is news only while an entry still waits because of one. */
  reached(clearError: boolean) {
    this.answered();
    this.lastSyncAt = this.lastPushAt = this.core.now();
    if (clearError) this.lastError = null;
    this.core.emitStatus();
  }

  /** The service answered something: it is reachable. */
  answered() {
    this.online = true;
    this.onAnswered();
  }

  recordError(error: unknown) {
    if (isOutOfReach(error)) this.online = false;
    // The transport already tried a fresh token: only the driver signing in again helps.
    if (error instanceof ProblemError && error.status === 401) this.needsSignIn = true;
    if (isTooOld(error)) {
      this.needsUpdate = true;
      this.minimumVersion = error.minimumVersion ?? this.minimumVersion;
    }
    this.lastError = {
      message: error instanceof Error ? error.message : String(error),
      code: error instanceof ProblemError ? error.code : error instanceof NetworkError ? 'network' : (error as { code?: string })?.code,
      status: error instanceof ProblemError ? error.status : undefined,
      at: this.core.now(),
    };
    this.core.emitStatus();
  }

  setNextRetry(at: number | null) {
    this.nextRetryAt = at;
    this.core.emitStatus();
  }
}

/** A refused entry as the app shows it; a scan names the delivery of its line, as the local copy knows it. */
export function toRejected(entry: OutboxEntry, core: Pick<ClientCore, 'deliveryOfAction'>): RejectedEvent {
  const action = entry.action;
  const type = action.kind === 'event' ? action.event.type : action.kind === 'completion' ? 'delivery.complete' : 'note.image';
  const deliveryId = core.deliveryOfAction(action) ?? null;
  return {
    id: entry.id,
    type,
    deliveryId,
    code: entry.rejection?.code ?? 'rejected',
    message: entry.rejection?.message ?? '',
    ...(entry.rejection?.reason ? { reason: entry.rejection.reason } : {}),
    ...(entry.rejection?.errors ? { errors: entry.rejection.errors } : {}),
    rejectedAt: entry.rejection?.at ?? 0,
    action,
  };
}
