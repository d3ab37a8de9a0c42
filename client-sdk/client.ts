import { isRefusal } from '../shared/rules/eventResults.js';
import type { AuditAction, CompleteDeliveryAcknowledgements, DeliveryDetails, TourDetails } from '../shared/schemas/deliveries.js';
import type { Change, EventResult, SyncEvent } from '../shared/schemas/sync.js';
import type { TourSummary } from '../shared/schemas/tours.js';
type TourSummaryShape = z.output<typeof TourSummary>;
import type { z } from 'zod';
import { TourlineApi, type Binary, type FetchLike, type GetToken } from './api.js';
import { backoffDelay, defaultBackoff, type BackoffPolicy } from './backoff.js';
import { fromBase64, toBase64 } from './binary.js';
import { Emitter } from './emitter.js';
import { LiveChanges, detectWebSocket, type WebSocketFactory } from './live.js';
import { Outbox, orderKeyOf, type CompletionAction, type NoteImageAction, type OutboxAction, type OutboxEntry, type Refusal } from './outbox.js';
import { NetworkError, ProblemError } from './problem.js';
import { LocalState, LOCAL_IMAGE_PREFIX } from './state.js';
import { JsonStore, MemoryStore, type KeyValueStore } from './storage/keyValue.js';

type DistributiveOmit<T, K extends keyof any> = T extends unknown ? Omit<T, K> : never;
/** A driver action as the app describes it; the SDK adds the event id and the time. */
export type EventInput = DistributiveOmit<SyncEvent, 'eventId' | 'occurredAt'>;

export interface TourlineClientOptions {
  baseUrl: string;
  getToken: GetToken;
  /** Where the outbox, the cursor and the tours live. Default: memory (lost on restart). */
  storage?: KeyValueStore;
  fetch?: FetchLike;
  /** Default: globalThis.WebSocket when present; null pulls /sync/changes only. */
  webSocket?: WebSocketFactory | null;
  now?: () => number;
  /** Client-generated ids; default globalThis.crypto.randomUUID. */
  randomId?: () => string;
  random?: () => number;
  backoff?: Partial<BackoffPolicy>;
  pollIntervalMs?: number;
  heartbeatMs?: number;
  maxBatch?: number;
  requestTimeoutMs?: number;
}

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
}

interface ClientEvents extends Record<string, unknown> {
  status: SyncStatus;
  rejected: RejectedEvent;
  /** Tours whose optimistic view changed. */
  change: { tourIds: string[] };
}

const CLIENT_ID_KEY = 'clientId';
const MAX_BATCH = 500;

function defaultRandomId(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (!c?.randomUUID) throw new Error('no crypto.randomUUID here; pass options.randomId');
  return c.randomUUID();
}

const isServerUnavailable = (e: unknown) => e instanceof ProblemError && (e.status === 429 || e.status === 408 || e.status >= 502);
const resultRefusal = (r: EventResult): Refusal =>
  ({ code: r.code ?? 'rejected', message: r.message ?? 'rejected by the service', reason: r.reason, errors: r.errors });
const problemRefusal = (p: ProblemError): Refusal => ({ code: p.code, message: p.detail ?? p.title, errors: p.errors });

/** A 4xx that repeating the same request cannot change, from the service or from a proxy (413). */
const isClientError = (e: unknown): e is ProblemError => e instanceof ProblemError && e.status >= 400 && e.status < 500 && ![401, 408, 429].includes(e.status);
/** The service said no to the request itself; a proxy's error page is not its verdict, and is tried again later. */
const isRejection = (e: unknown) => isClientError(e) && e.fromService;
/** The service itself answered with this status (a proxy's page of the same status does not count). */
const serviceAnswered = (e: unknown, status: number) => e instanceof ProblemError && e.fromService && e.status === status;
/** The service is out of reach or asks to slow down: nothing else is worth sending now. */
const isOutOfReach = (e: unknown) => e instanceof NetworkError || isServerUnavailable(e);

/**
 * The driver app's side of Tourline. Every action is written to a durable outbox before the
 * call returns, pushed in order per delivery, retried with backoff until the service answers,
 * and shown at once in an optimistic view computed with the same rules the server runs.
 */
export class TourlineClient {
  readonly api: TourlineApi;
  private readonly events = new Emitter<ClientEvents>();
  private readonly now: () => number;
  private readonly randomId: () => string;
  private readonly random: () => number;
  private readonly policy: BackoffPolicy;
  private readonly live: LiveChanges;
  private readonly maxBatch: number;
  private flushChain: Promise<unknown> = Promise.resolve();
  private changeChain: Promise<unknown> = Promise.resolve();
  private addChain: Promise<unknown> = Promise.resolve();
  /** The send under way (a push or an upload) until its answer is recorded; see `ingest`. */
  private sending: Promise<unknown> = Promise.resolve();
  private flushScheduled = false;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private retryAttempt = 0;
  private generation = 1;
  private started = false;
  private closed = false;
  private statusState = {
    online: true, lastSyncAt: null as number | null, lastError: null as SyncStatus['lastError'], nextRetryAt: null as number | null,
  };

  private constructor(
    readonly options: TourlineClientOptions,
    private readonly store: JsonStore,
    readonly outbox: Outbox,
    readonly state: LocalState,
    readonly clientId: string,
  ) {
    this.now = options.now ?? Date.now;
    // The service answers ids in lower case, the form UUIDs are written in; the outbox finds its entries by them.
    const randomId = options.randomId ?? defaultRandomId;
    this.randomId = () => randomId().toLowerCase();
    this.random = options.random ?? Math.random;
    this.policy = { ...defaultBackoff, ...options.backoff };
    this.maxBatch = Math.min(MAX_BATCH, options.maxBatch ?? MAX_BATCH);
    this.api = new TourlineApi({ baseUrl: options.baseUrl, getToken: options.getToken, fetch: options.fetch, timeoutMs: options.requestTimeoutMs, now: this.now });
    this.live = new LiveChanges({
      baseUrl: options.baseUrl,
      webSocket: options.webSocket === null ? undefined : options.webSocket ?? detectWebSocket(),
      token: async (forceRefresh) => options.getToken({ forceRefresh }),
      cursor: () => this.state.cursor,
      ingest: (changes, cursor) => this.serialChanges(() => this.ingest(changes, cursor)),
      pull: () => this.pull(),
      onConnected: () => this.emitStatus(),
      onError: (error) => this.recordError(error),
      onCursorRefused: () => void this.pull().then(() => this.live.restart()).catch((error) => this.recordError(error)),
      pollIntervalMs: options.pollIntervalMs ?? 5000,
      heartbeatMs: options.heartbeatMs ?? 25_000,
      backoff: this.policy,
      random: this.random,
    });
  }

  /** Loads the outbox, the local tours and the cursor from storage. Nothing is sent before `start()`. */
  static async open(options: TourlineClientOptions): Promise<TourlineClient> {
    const store = new JsonStore(options.storage ?? new MemoryStore());
    const outbox = await Outbox.load(store);
    const state = await LocalState.load(store);
    let clientId = await store.get<string>(CLIENT_ID_KEY);
    if (!clientId) {
      clientId = (options.randomId ?? defaultRandomId)();
      await store.set(CLIENT_ID_KEY, clientId);
    }
    await outbox.settle({ lastSeq: state.lastSeq });
    return new TourlineClient(options, store, outbox, state, clientId);
  }

  /** Starts pushing the outbox and (unless `live: false`) following live changes. */
  start(options: { live?: boolean } = {}) {
    if (this.started || this.closed) return;
    this.started = true;
    if (options.live ?? true) this.live.start();
    this.scheduleFlush();
  }

  stop() {
    this.started = false;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.statusState.nextRetryAt = null;
    this.live.stop();
  }

  /** Stops, waits for running work, and closes the storage. */
  async close() {
    this.stop();
    this.closed = true;
    await this.addChain;
    await this.flushChain.catch(() => undefined);
    await this.changeChain.catch(() => undefined);
    await this.store.kv.close?.();
  }

  // ---------- reading ----------

  /** Reads the driver's tours of a day into the local copy (the feed keeps them current afterwards). */
  async loadTours(query: { date?: string } = {}): Promise<TourSummaryShape[]> {
    await this.ensureCursor();
    const { tours } = await this.api.tours(query);
    for (const summary of tours) await this.refetchTour(summary.id);
    await this.pull();
    return tours;
  }

  /** Cars, payment methods and services, which the optimistic rules consult. */
  async loadMasterData() {
    const [{ cars }, { paymentMethods }, { services }] = await Promise.all([
      this.api.cars({ includeInactive: true }), this.api.paymentMethods({ includeInactive: true }), this.api.services({ includeInactive: true }),
    ]);
    const index = <T extends { id: string }>(list: T[]) => Object.fromEntries(list.map((x) => [x.id, x]));
    await this.state.putMaster({ cars: index(cars), paymentMethods: index(paymentMethods), services: index(services) });
  }

  /** Reads one tour into the local copy. */
  async loadTour(tourId: string) {
    await this.ensureCursor();
    await this.refetchTour(tourId);
    await this.pull();
  }

  tourIds(): string[] { return [...this.state.tours.keys()]; }

  /** The server's state as this device last heard it. */
  serverTour(tourId: string): TourDetails | undefined {
    const tour = this.state.tours.get(tourId);
    return tour ? structuredClone(tour) : undefined;
  }

  /** The server's state plus everything still in the outbox. */
  view(tourId: string): TourDetails | undefined {
    return this.state.view(tourId, this.outbox.unsettled());
  }

  delivery(deliveryId: string): DeliveryDetails | undefined {
    for (const tourId of this.tourIds()) {
      const found = this.view(tourId)?.deliveries.find((d) => d.id === deliveryId);
      if (found) return found;
    }
    return undefined;
  }

  /** The bytes of a note image that still waits in the outbox (its reference starts with `local:`). */
  localImage(reference: string): Uint8Array | undefined {
    if (!reference.startsWith(LOCAL_IMAGE_PREFIX)) return undefined;
    const action = this.outbox.get(reference.slice(LOCAL_IMAGE_PREFIX.length))?.action;
    return action?.kind === 'noteImage' ? fromBase64(action.image) : undefined;
  }

  // ---------- driver actions: each resolves once it is durable in the outbox ----------

  scan(deliveryItemId: string, options: { authorCarId?: string | null } = {}) { return this.itemAction(deliveryItemId, 'scan', options); }
  unscan(deliveryItemId: string, options: { authorCarId?: string | null } = {}) { return this.itemAction(deliveryItemId, 'unscan', options); }
  /** Without `quantity` the whole line is removed; with it, that many pieces are credited. */
  removeItem(deliveryItemId: string, options: { quantity?: number; reason?: string; authorCarId?: string | null } = {}) {
    return this.itemAction(deliveryItemId, 'remove', options);
  }
  unremoveItem(deliveryItemId: string, options: { authorCarId?: string | null } = {}) { return this.itemAction(deliveryItemId, 'unremove', options); }
  holdItem(deliveryItemId: string, options: { reason?: string; authorCarId?: string | null } = {}) { return this.itemAction(deliveryItemId, 'hold', options); }
  unholdItem(deliveryItemId: string, options: { authorCarId?: string | null } = {}) { return this.itemAction(deliveryItemId, 'unhold', options); }

  holdDelivery(deliveryId: string, reason: string) { return this.enqueue({ type: 'delivery.hold', deliveryId, reason }); }
  resumeDelivery(deliveryId: string) { return this.enqueue({ type: 'delivery.resume', deliveryId }); }
  cancelDelivery(deliveryId: string, reason: string) { return this.enqueue({ type: 'delivery.cancel', deliveryId, reason }); }
  assignCar(deliveryId: string, carId: string | null) { return this.enqueue({ type: 'delivery.assignCar', deliveryId, carId }); }

  setCredit(deliveryId: string, credit: { amountCents: number; reason: string; authorCarId?: string | null }) {
    return this.enqueue({ type: 'credit', deliveryId, action: 'set', ...credit });
  }
  removeCredit(deliveryId: string, options: { authorCarId?: string | null } = {}) { return this.enqueue({ type: 'credit', deliveryId, action: 'remove', ...options }); }

  /**
   * `expectedAmountCents` defaults to the open amount the driver sees in the view, read once the
   * calls before this one are in the outbox (a credit just given lowers it).
   */
  recordPayment(deliveryId: string, payment: { paymentMethodId: string; expectedAmountCents?: number; authorCarId?: string | null }) {
    return this.queueEvent(() => {
      const expectedAmountCents = payment.expectedAmountCents ?? this.delivery(deliveryId)?.openAmountCents;
      if (expectedAmountCents === undefined) throw new Error(`delivery ${deliveryId} is not in the local copy; pass expectedAmountCents`);
      return { type: 'payment', deliveryId, ...payment, expectedAmountCents };
    });
  }

  async createNote(deliveryId: string, note: { text?: string | null; imageAttachment?: string | null; authorCarId?: string | null; creditDeliveryItemId?: string | null; isAmountCreditNote?: boolean }) {
    const noteId = this.randomId();
    const { eventId } = await this.enqueue({ type: 'note.create', deliveryId, noteId, ...note });
    return { eventId, noteId };
  }

  /** A note with a photo: the image is kept in the outbox, uploaded once, then the note is completed. */
  async createImageNote(deliveryId: string, note: { image: Binary; contentType?: string; text?: string | null; authorCarId?: string | null }) {
    const id = this.randomId();
    const noteId = this.randomId();
    const occurredAt = this.isoNow();
    const followUpEventId = this.randomId();
    await this.add(id, async (): Promise<NoteImageAction> => ({
      kind: 'noteImage', deliveryId, noteId, occurredAt, image: await toBase64(note.image),
      contentType: note.contentType ?? 'image/jpeg', text: note.text?.trim() ? note.text : null, authorCarId: note.authorCarId ?? null,
      followUpEventId,
    }));
    return { eventId: id, noteId };
  }

  updateNote(deliveryId: string, noteId: string, patch: { text?: string | null; imageAttachment?: string | null }) {
    return this.enqueue({ type: 'note.update', deliveryId, noteId, ...patch });
  }
  deleteNote(deliveryId: string, noteId: string) { return this.enqueue({ type: 'note.delete', deliveryId, noteId }); }

  setServiceValue(deliveryId: string, serviceId: string, value: { boolValue?: boolean | null; numericValue?: number | null }) {
    return this.enqueue({ type: 'service.set', deliveryId, serviceId, ...value });
  }
  clearServiceValue(deliveryId: string, serviceId: string) { return this.enqueue({ type: 'service.clear', deliveryId, serviceId }); }

  /** Completion with both signatures (PNG); replayed safely through `acknowledgements.clientEventId`. */
  async complete(deliveryId: string, input: { customerSignature: Binary; driverSignature: Binary; acknowledgements: Omit<CompleteDeliveryAcknowledgements, 'clientEventId' | 'occurredAt'> }) {
    const id = this.randomId();
    const occurredAt = this.isoNow();
    await this.add(id, async (): Promise<CompletionAction> => {
      const [customerSignature, driverSignature] = await Promise.all([toBase64(input.customerSignature), toBase64(input.driverSignature)]);
      return { kind: 'completion', deliveryId, occurredAt, acknowledgements: { ...input.acknowledgements, clientEventId: id }, customerSignature, driverSignature };
    });
    return { eventId: id };
  }

  /** Any event of the sync protocol, for actions without a helper. */
  enqueue(input: EventInput): Promise<{ eventId: string }> { return this.queueEvent(() => input); }

  private async queueEvent(build: () => EventInput): Promise<{ eventId: string }> {
    const eventId = this.randomId();
    const occurredAt = this.isoNow();
    await this.add(eventId, () => ({ kind: 'event', event: { ...build(), eventId, occurredAt } as SyncEvent }));
    return { eventId };
  }

  private itemAction(deliveryItemId: string, action: AuditAction, options: { quantity?: number; reason?: string; authorCarId?: string | null }) {
    return this.enqueue({ type: 'scan', deliveryItemId, action, ...options });
  }

  /**
   * Entries join the outbox in the order of the calls, also when the app does not await one
   * call before the next, and when an action's bytes (a photo, signatures) take a moment to read:
   * each action is built once the ones before it are in.
   */
  private add(id: string, build: () => OutboxAction | Promise<OutboxAction>): Promise<void> {
    const added = this.addChain.then(async () => {
      const action = await build();
      await this.outbox.add(id, action, this.now(), this.orderKey(action));
      this.emitChange(this.tourOfAction(action));
      this.emitStatus();
      this.scheduleFlush();
    });
    this.addChain = added.catch(() => undefined);
    return added;
  }

  /** Scans are ordered with the other events of their delivery, which the local copy knows. */
  private orderKey(action: OutboxAction): string {
    if (action.kind === 'event' && action.event.type === 'scan') {
      const itemId = action.event.deliveryItemId;
      for (const tour of this.state.tours.values()) {
        const delivery = tour.deliveries.find((d) => d.positions.some((p) => p.id === itemId));
        if (delivery) return `delivery:${delivery.id}`;
      }
    }
    return orderKeyOf(action);
  }

  // ---------- status ----------

  status(): SyncStatus {
    const pending = this.outbox.pending();
    const oldest = pending.length ? Math.min(...pending.map((e) => e.createdAt)) : null;
    return {
      pendingCount: pending.length,
      oldestPendingAt: oldest,
      oldestPendingAgeMs: oldest === null ? 0 : Math.max(0, this.now() - oldest),
      rejected: this.outbox.rejected().map(toRejected),
      online: this.statusState.online,
      liveConnected: this.live.connected,
      lastSyncAt: this.statusState.lastSyncAt,
      lastError: this.statusState.lastError,
      nextRetryAt: this.statusState.nextRetryAt,
    };
  }

  /** Calls `listener` now and on every status change; returns the unsubscribe function. */
  subscribe(listener: (status: SyncStatus) => void): () => void {
    listener(this.status());
    return this.events.on('status', listener);
  }

  on<K extends keyof ClientEvents>(event: K, listener: (value: ClientEvents[K]) => void) { return this.events.on(event, listener); }

  rejected(): RejectedEvent[] { return this.outbox.rejected().map(toRejected); }

  /** The app has shown the rejection to the driver: forget it. */
  async dismissRejected(id: string) {
    const entry = this.outbox.get(id);
    if (entry?.state === 'rejected') await this.outbox.remove(entry);
    this.emitStatus();
  }

  // ---------- syncing ----------

  /**
   * Pushes everything that can go now and catches up with the change feed. Throws what stopped
   * it (the entries stay queued); `start()` does the same in the background with backoff.
   */
  async sync(): Promise<SyncStatus> {
    await this.serialFlush(() => this.flushAll());
    await this.pull();
    return this.status();
  }

  /** Resolves when the outbox is empty and the view has settled, or rejects after `timeoutMs`. */
  async settled(timeoutMs = 30_000): Promise<SyncStatus> {
    const deadline = this.now() + timeoutMs;
    for (;;) {
      const busy = this.outbox.all().some((e) => e.state !== 'rejected');
      if (!busy) return this.status();
      if (this.now() > deadline) throw new Error(`not settled after ${timeoutMs} ms: ${JSON.stringify(this.status())}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  private serialFlush<T>(work: () => Promise<T>): Promise<T> {
    const run = this.flushChain.catch(() => undefined).then(work);
    this.flushChain = run;
    return run;
  }

  private serialChanges<T>(work: () => Promise<T>): Promise<T> {
    const run = this.changeChain.catch(() => undefined).then(work);
    this.changeChain = run;
    return run;
  }

  private scheduleFlush() {
    if (!this.started || this.flushScheduled || this.retryTimer) return;
    this.flushScheduled = true;
    queueMicrotask(() => {
      this.flushScheduled = false;
      void this.serialFlush(() => this.backgroundFlush());
    });
  }

  private async backgroundFlush() {
    if (!this.started || this.retryTimer) return;
    try {
      await this.flushAll();
      this.retryAttempt = 0;
      if (this.outbox.all().some((e) => e.state === 'acknowledged')) await this.pull();
    } catch (error) {
      const delay = backoffDelay(this.retryAttempt++, this.random, this.policy, error instanceof ProblemError ? error.retryAfterMs : undefined);
      this.statusState.nextRetryAt = this.now() + delay;
      this.emitStatus();
      this.retryTimer = setTimeout(() => {
        this.retryTimer = undefined;
        this.statusState.nextRetryAt = null;
        this.scheduleFlush();
      }, delay);
    }
  }

  /** Rounds until nothing more can be sent; throws on a transient failure. */
  private async flushAll() {
    while (await this.flushRound()) { /* next round: entries that waited behind a multipart one */ }
  }

  /**
   * One round: the longest prefix of pending events that can go in one push, in order per
   * delivery, plus the first multipart entry (completion, note image) of each delivery with
   * nothing before it. Later entries of a delivery wait behind its multipart entry.
   */
  private async flushRound(): Promise<boolean> {
    const batch: OutboxEntry[] = [];
    const multipart: OutboxEntry[] = [];
    const blocked = new Set<string>();
    const inBatch = new Set<string>();
    for (const entry of this.outbox.pending()) {
      if (blocked.has(entry.orderKey)) continue;
      if (entry.action.kind === 'event' && batch.length < this.maxBatch) {
        batch.push(entry);
        inBatch.add(entry.orderKey);
        continue;
      }
      if (entry.action.kind !== 'event' && !inBatch.has(entry.orderKey)) multipart.push(entry);
      blocked.add(entry.orderKey);
    }
    if (batch.length === 0 && multipart.length === 0) return false;
    // Each part goes on its own: a photo the service cannot store now must not hold up another
    // delivery's completion. The round then fails with the first failure, to be retried; at
    // once when the service is out of reach, whose Retry-After then sets the pause.
    let failure: unknown;
    const parts = [...(batch.length ? [() => this.pushBatch(batch)] : []), ...multipart.map((entry) => () => this.sendMultipart(entry))];
    for (const send of parts) {
      try {
        const sent = send();
        this.sending = sent.catch(() => undefined);
        await sent;
      } catch (error) {
        if (isOutOfReach(error)) throw error;
        failure ??= error;
      }
    }
    if (failure) throw failure;
    this.succeeded();
    return true;
  }

  private async pushBatch(entries: OutboxEntry[]): Promise<void> {
    const events = entries.map((e) => (e.action as { event: SyncEvent }).event);
    let results: EventResult[];
    try {
      ({ results } = await this.api.push({ clientId: this.clientId, events }));
    } catch (error) {
      if (isClientError(error) || (error instanceof ProblemError && error.status === 500)) {
        // The batch as a whole was refused (or crashed the server, or was too large for a proxy):
        // halve it to find the event at fault. Halving loses nothing; only the service rejects.
        if (entries.length > 1) {
          const half = Math.ceil(entries.length / 2);
          let failure: unknown;
          try {
            await this.pushBatch(entries.slice(0, half));
          } catch (e) {
            failure = e;
          }
          // Deliveries whose events are still stuck in the first half wait; the others go on.
          const stuck = new Set(entries.slice(0, half).filter((e) => e.state === 'pending').map((e) => e.orderKey));
          const rest = entries.slice(half).filter((e) => !stuck.has(e.orderKey));
          if (rest.length) {
            try {
              await this.pushBatch(rest);
            } catch (e) {
              failure ??= e;
            }
          }
          if (failure) throw failure;
          return;
        }
        if (isRejection(error)) {
          await this.rejectEntry(entries[0], problemRefusal(error as ProblemError));
          return;
        }
      }
      await this.failed(entries, error);
      throw error;
    }
    const byId = new Map(results.map((r) => [r.eventId, r]));
    const unanswered = entries.filter((e) => !byId.has(e.id));
    if (unanswered.length) {
      const error = new NetworkError(`not an answer of the service: no result for ${unanswered.length} of ${entries.length} events`);
      await this.failed(entries, error);
      throw error;
    }
    // A copy answered `duplicate` was committed before this push: the push's seq covers it too.
    const pushSeq = Math.max(...results.map((r) => r.seq ?? -1));
    for (const entry of entries) {
      const result = byId.get(entry.id)!;
      if (isRefusal(result)) await this.rejectEntry(entry, resultRefusal(result));
      else await this.outbox.acknowledge(entry, this.generation, result.seq ?? (pushSeq >= 0 ? pushSeq : undefined));
    }
    // The live feed may have brought these changes before the answer came.
    this.emitChange(...await this.settledTours());
    this.emitChange(...entries.map((e) => this.tourOfAction(e.action)));
  }

  private async sendMultipart(entry: OutboxEntry) {
    const action = entry.action;
    try {
      if (action.kind === 'completion') {
        const answer = await this.api.complete(action.deliveryId, {
          customerSignature: fromBase64(action.customerSignature),
          driverSignature: fromBase64(action.driverSignature),
          // Its time goes along, so that a completion sent hours later counts when it happened.
          acknowledgements: { ...action.acknowledgements, occurredAt: action.occurredAt },
        });
        if (answer?.delivery?.id !== action.deliveryId) throw new NetworkError('not an answer of the service: no completed delivery');
        await this.outbox.acknowledge(entry, this.generation);
      } else if (action.kind === 'noteImage') {
        await this.sendNoteImage(entry, action);
      }
    } catch (error) {
      if (isRejection(error)) {
        await this.rejectEntry(entry, problemRefusal(error as ProblemError));
        return;
      }
      await this.failed([entry], error);
      throw error;
    }
    this.emitChange(this.tourOfAction(action));
  }

  /**
   * Upload first, remembering its answer in the entry before anything else; then, if the upload
   * did not take the text, a `note.update` with its own stable event id adds it. A resend after a
   * lost answer therefore never creates a second note or uploads twice once the answer was seen;
   * the upload carries the client's note id so the service can recognise a repeat as well.
   */
  private async sendNoteImage(entry: OutboxEntry, action: NoteImageAction) {
    let uploaded = action.uploaded;
    if (!uploaded) {
      const fields: Record<string, string> = { noteId: action.noteId, clientEventId: entry.id };
      if (action.text) fields.text = action.text;
      if (action.authorCarId) fields.authorCarId = action.authorCarId;
      const answer = await this.api.uploadNoteImage(action.deliveryId, { file: fromBase64(action.image), contentType: action.contentType, fields });
      if (!answer || !('note' in answer)) throw new NetworkError('not an answer of the service: no note');
      const { note } = answer;
      if (!note) {
        // A repeat of an upload whose note was deleted since (on another device, say): it is done.
        await this.outbox.acknowledge(entry, this.generation);
        return;
      }
      uploaded = { noteId: note.id, imageAttachment: note.imageAttachment, text: note.text };
      await this.outbox.update(entry, { action: { ...action, uploaded } });
      if (note.id !== action.noteId) await this.outbox.renameNote(action.noteId, note.id);
    }
    // Only when the upload took no text at all: a repeat answers the note as it is now, whose
    // text another device may have changed since, and that change stands.
    if (action.text && !uploaded.text) {
      const event: SyncEvent = { type: 'note.update', eventId: action.followUpEventId, occurredAt: action.occurredAt, deliveryId: action.deliveryId, noteId: uploaded.noteId, text: action.text };
      const { results } = await this.api.push({ clientId: this.clientId, events: [event] });
      const result = results[0];
      if (result && isRefusal(result)) {
        await this.rejectEntry(entry, resultRefusal(result));
        return;
      }
    }
    await this.outbox.acknowledge(entry, this.generation);
  }

  private async rejectEntry(entry: OutboxEntry, refusal: Refusal) {
    await this.outbox.reject(entry, refusal, this.now());
    this.events.emit('rejected', toRejected(entry));
    this.emitChange(this.tourOfAction(entry.action));
    this.emitStatus();
  }

  private async failed(entries: OutboxEntry[], error: unknown) {
    const message = error instanceof Error ? error.message : String(error);
    for (const entry of entries) await this.outbox.update(entry, { attempts: entry.attempts + 1, lastError: message });
    this.recordError(error);
  }

  private succeeded() {
    this.statusState.online = true;
    this.statusState.lastSyncAt = this.now();
    this.statusState.lastError = null;
    this.emitStatus();
  }

  private recordError(error: unknown) {
    if (isOutOfReach(error)) this.statusState.online = false;
    this.statusState.lastError = {
      message: error instanceof Error ? error.message : String(error),
      code: error instanceof ProblemError ? error.code : error instanceof NetworkError ? 'network' : (error as { code?: string })?.code,
      status: error instanceof ProblemError ? error.status : undefined,
      at: this.now(),
    };
    this.emitStatus();
  }

  // ---------- the change feed ----------

  /** Pulls /sync/changes to the head, then lets acknowledged entries go: the server state now contains them. */
  pull(): Promise<void> {
    return this.serialChanges(async () => {
      // Entries acknowledged before this pull started are in the server state it reads.
      const generation = ++this.generation;
      try {
        for (;;) {
          const page = await this.api.changes({ since: this.state.cursor, limit: 1000 });
          await this.ingest(page.changes, page.cursor);
          if (!page.hasMore) break;
        }
      } catch (error) {
        const cursorRefused = serviceAnswered(error, 400) && this.state.cursor !== null;
        if (!cursorRefused) {
          this.recordError(error);
          throw error;
        }
        await this.resync();
      }
      this.statusState.online = true;
      this.statusState.lastSyncAt = this.now();
      // The service answers again; an error stays news only while an entry waits to be sent again.
      if (!this.outbox.pending().some((e) => e.lastError)) this.statusState.lastError = null;
      this.emitChange(...await this.settledTours(generation));
      this.emitStatus();
    });
  }

  private async ingest(changes: Change[], cursor: string) {
    // Changes may hold what a send under way wrote before its answer came: applied to the copy
    // while the entry still counts as pending, the view would show it twice. So they wait for the
    // answer, whose seq then lets the entry go.
    await this.sending;
    const outcome = await this.state.applyChanges(changes, cursor);
    for (const tourId of outcome.refetch) await this.refetchTour(tourId).catch((error) => this.recordError(error));
    // Before telling anyone: an entry the server's state now holds must not count twice in the view.
    const touched = [...outcome.changedTours, ...outcome.refetch, ...await this.settledTours()];
    if (touched.length) this.emitChange(...touched);
  }

  /** Lets go of the acknowledged entries that the local copy of the server's state now holds; answers the tours whose view that changes. */
  private async settledTours(generation?: number): Promise<string[]> {
    return await this.outbox.settle({ lastSeq: this.state.lastSeq, generation }) ? this.tourIds() : [];
  }

  private async refetchTour(tourId: string) {
    try {
      await this.state.putTour(await this.api.tour(tourId));
    } catch (error) {
      if (serviceAnswered(error, 404)) await this.state.dropTour(tourId);
      else throw error;
    }
    this.emitChange(tourId);
  }

  /** Takes a cursor of "now" before the first tour read, so nothing between the two is missed. */
  private async ensureCursor() {
    if (this.state.cursor !== null) return;
    const head = await this.headCursor();
    // A server without /sync/cursor: walking the feed from the start ends at the same place.
    if (head === null) await this.pull();
    else await this.state.setCursor(head);
  }

  private async headCursor(): Promise<string | null> {
    try {
      return (await this.api.cursor()).cursor;
    } catch (error) {
      if (serviceAnswered(error, 404)) return null;
      throw error;
    }
  }

  /** The cursor is no longer valid (the log was pruned or the database reset): read everything again. */
  private async resync() {
    const tourIds = this.tourIds();
    await this.state.setCursor(await this.headCursor(), -1);
    for (const id of tourIds) await this.refetchTour(id);
  }

  // ---------- helpers ----------

  private isoNow() { return new Date(this.now()).toISOString(); }

  private tourOfAction(action: OutboxAction): string | undefined {
    const deliveryId = action.kind === 'event' ? ('deliveryId' in action.event ? action.event.deliveryId : undefined) : action.deliveryId;
    for (const tour of this.state.tours.values()) {
      if (deliveryId && tour.deliveries.some((d) => d.id === deliveryId)) return tour.tour.id;
      if (action.kind === 'event' && action.event.type === 'scan') {
        const itemId = action.event.deliveryItemId;
        if (tour.deliveries.some((d) => d.positions.some((p) => p.id === itemId))) return tour.tour.id;
      }
    }
    return undefined;
  }

  private emitChange(...tourIds: (string | undefined)[]) {
    const ids = [...new Set(tourIds.filter((id): id is string => !!id))];
    if (ids.length) this.events.emit('change', { tourIds: ids });
  }

  private emitStatus() { this.events.emit('status', this.status()); }
}

function toRejected(entry: OutboxEntry): RejectedEvent {
  const action = entry.action;
  const type = action.kind === 'event' ? action.event.type : action.kind === 'completion' ? 'delivery.complete' : 'note.image';
  const deliveryId = action.kind === 'event' ? ('deliveryId' in action.event ? action.event.deliveryId ?? null : null) : action.deliveryId;
  return {
    id: entry.id, type, deliveryId, code: entry.rejection?.code ?? 'rejected', message: entry.rejection?.message ?? '',
    ...(entry.rejection?.reason ? { reason: entry.rejection.reason } : {}),
    ...(entry.rejection?.errors ? { errors: entry.rejection.errors } : {}),
    rejectedAt: entry.rejection?.at ?? 0, action,
  };
}

