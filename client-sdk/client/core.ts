import { newId } from '../../shared/ids.js';
import type { TourDetails } from '../../shared/schemas/deliveries.js';
import type { SyncEvent } from '../../shared/schemas/sync.js';
import { TourlineApi, type FetchLike, type GetToken } from '../api.js';
import type { AcknowledgedActions, KeepAcknowledgedOptions } from '../acknowledged.js';
import type { AttachmentStore } from '../attachments.js';
import { defaultBackoff, type BackoffPolicy } from '../backoff.js';
import { Emitter } from '../emitter.js';
import type { WebSocketFactory } from '../live.js';
import type { MultipartBuilder } from '../multipart.js';
import type { Outbox, OutboxAction, OutboxEntry } from '../outbox.js';
import type { LocalState } from '../state.js';
import type { TabCoordinator } from '../tabs.js';
import type { JsonStore, KeyValueStore } from '../storage/keyValue.js';
import type { HealthReporter } from '../health.js';
import { Outcomes } from './outcomes.js';
import type { RejectedEvent, SyncStatus } from './status.js';

type DistributiveOmit<T, K extends keyof any> = T extends unknown ? Omit<T, K> : never;
/** A driver action as the app describes it; the SDK adds the event id and the time. */
export type EventInput = DistributiveOmit<SyncEvent, 'eventId' | 'occurredAt'>;

export interface TourlineClientOptions {
  baseUrl: string;
  getToken: GetToken;
  /** Where the outbox, the cursor and the tours live. Default: memory (lost on restart). */
  storage?: KeyValueStore;
  /** Where photos and signatures wait until sent. Default: in `storage`, each under its own key. */
  attachments?: AttachmentStore;
  /** Builds multipart bodies; default by platform (React Native: `{ uri, name, type }`; elsewhere: Blobs). */
  multipart?: MultipartBuilder;
  fetch?: FetchLike;
  /** Default: globalThis.WebSocket when present; null pulls /sync/changes only. */
  webSocket?: WebSocketFactory | null;
  now?: () => number;
  /** Client-generated ids (events, scans, notes); default time-ordered UUIDv7 from crypto.getRandomValues. */
  randomId?: () => string;
  random?: () => number;
  backoff?: Partial<BackoffPolicy>;
  pollIntervalMs?: number;
  heartbeatMs?: number;
  maxBatch?: number;
  requestTimeoutMs?: number;
  /**
   * How tabs sharing the storage agree which one sends. Default: Web Locks and BroadcastChannel
   * when the storage is shared by name (IndexedDB) and the platform has them; null: this client always sends.
   */
  tabs?: TabCoordinator | null;
  /**
   * Default true: an action the rules refuse on what the device knows is not queued, its call
   * rejects with a RefusalError (see `check`). False queues every action and leaves every verdict to the service.
   */
  checkLocally?: boolean;
  /**
   * How long the client keeps actions the service acknowledged, with their photos and
   * signatures, to send them again to a service restored from an older backup. Default 72
   * hours and 64 MiB; null keeps nothing.
   */
  keepAcknowledged?: KeepAcknowledgedOptions | null;
  /** Named in the device's health report, so the office sees which app and release a phone runs. */
  app?: { name: string; version: string };
  /** The platform the health report names; default detected (react-native, hermes, node, web). */
  platform?: string;
  /** Reports the device's sync health to the service (default true; docs/client-sdk.md, "Sync health"). */
  healthReports?: boolean;
}

export interface ClientEvents extends Record<string, unknown> {
  status: SyncStatus;
  rejected: RejectedEvent;
  /** Tours whose optimistic view changed. */
  change: { tourIds: string[] };
}

const MAX_BATCH = 500;

/** Time-ordered (UUIDv7): the service's indexes of event and scan ids then grow at one end. */
export const defaultRandomId = newId;

/** Runs jobs one after another; a failed job does not stop the next. */
export class Serial {
  private chain: Promise<unknown> = Promise.resolve();

  run<T>(work: () => Promise<T>): Promise<T> {
    const run = this.chain.catch(() => undefined).then(work);
    this.chain = run;
    return run;
  }

  idle() {
    return this.chain.catch(() => undefined);
  }
}

const namedDelivery = (action: OutboxAction): string | undefined =>
  action.kind === 'event' ? ('deliveryId' in action.event ? action.event.deliveryId : undefined) : action.deliveryId;

/** What every part of the client shares: options, storage, the outbox and the local copy, and the events it emits. */
export class ClientCore {
  readonly api: TourlineApi;
  readonly events = new Emitter<ClientEvents>();
  readonly now: () => number;
  readonly randomId: () => string;
  readonly random: () => number;
  readonly policy: BackoffPolicy;
  readonly maxBatch: number;
  /** The send under way (a push or an upload) until its answer is recorded; the feed waits for it. */
  sending: Promise<unknown> = Promise.resolve();
  /** Catch-up generation: entries acknowledged before a pull started are in the state it reads. */
  generation = 1;
  /** The handles of the actions queued in this session. */
  readonly outcomes = new Outcomes();
  /** Entries the local copy holds already (a change named them) until the feed has removed them. */
  readonly heldByCopy = new Set<string>();
  /** The device's health report, unless the app turned it off (`healthReports: false`). */
  health: HealthReporter | undefined;
  /** Set by the status part; every part reports through it. */
  emitStatus: () => void = () => undefined;

  constructor(
    readonly options: TourlineClientOptions,
    readonly store: JsonStore,
    readonly outbox: Outbox,
    readonly state: LocalState,
    readonly clientId: string,
    readonly attachments: AttachmentStore,
    readonly kept: AcknowledgedActions,
  ) {
    this.now = options.now ?? Date.now;
    // The service answers ids in lower case, the form UUIDs are written in; the outbox finds its entries by them.
    const randomId = options.randomId ?? defaultRandomId;
    this.randomId = () => randomId().toLowerCase();
    this.random = options.random ?? Math.random;
    this.policy = { ...defaultBackoff, ...options.backoff };
    this.maxBatch = Math.min(MAX_BATCH, options.maxBatch ?? MAX_BATCH);
    this.api = new TourlineApi({
      baseUrl: options.baseUrl,
      getToken: options.getToken,
      fetch: options.fetch,
      timeoutMs: options.requestTimeoutMs,
      now: this.now,
      multipart: options.multipart,
    });
  }

  /** Photos and signatures the service has: they go, unless the window of acknowledged actions keeps them. */
  async letAttachmentsGo(ids: string[]) {
    if (this.kept.active) return;
    for (const id of ids) await this.attachments.delete(id).catch(() => undefined);
  }

  isoNow() {
    return new Date(this.now()).toISOString();
  }

  tourIds(): string[] {
    return [...this.state.tours.keys()];
  }

  /**
   * What the view adds on top of the local copy: every entry not refused, but none the copy
   * already holds, also in the moment between the copy taking a change and the entry's removal.
   */
  entriesOnTop(): OutboxEntry[] {
    const { lastSeq } = this.state;
    return this.outbox
      .unsettled()
      .filter((e) => !this.heldByCopy.has(e.id) && !(e.state === 'acknowledged' && e.ackSeq !== undefined && e.ackSeq <= lastSeq));
  }

  tourOfAction(action: OutboxAction): string | undefined {
    return this.whereIs(action)?.tourId;
  }

  /** The delivery an action is about; a scan's is its line's, as the local copy knows it. */
  deliveryOfAction(action: OutboxAction): string | undefined {
    return this.whereIs(action)?.deliveryId ?? namedDelivery(action);
  }

  private whereIs(action: OutboxAction): { tourId: string; deliveryId: string } | undefined {
    const event = action.kind === 'event' ? action.event : undefined;
    const itemId = event?.type === 'scan' ? event.deliveryItemId : undefined;
    const noteId = event?.type === 'note.update' || event?.type === 'note.delete' ? event.noteId : undefined;
    const deliveryId = namedDelivery(action);
    const names = (d: TourDetails['deliveries'][number]) =>
      itemId ? d.positions.some((p) => p.id === itemId) : deliveryId ? d.id === deliveryId : d.notes.some((n) => n.id === noteId);
    for (const tour of this.state.tours.values()) {
      const found = tour.deliveries.find(names);
      if (found) return { tourId: tour.tour.id, deliveryId: found.id };
    }
    return undefined;
  }

  emitChange(...tourIds: (string | undefined)[]) {
    const ids = [...new Set(tourIds.filter((id): id is string => !!id))];
    if (ids.length) this.events.emit('change', { tourIds: ids });
  }
}
