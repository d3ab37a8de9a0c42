import type { Binary } from './api.js';
import type { Outbox } from './outbox.js';
import type { LocalState } from './state.js';
import type { Actions, RetryChanges } from './client/actions.js';
import type { ClientEvents, EventInput, TourlineClientOptions } from './client/core.js';
import { Lifecycle, openParts, type Parts } from './client/lifecycle.js';
import type { Reads } from './client/reads.js';
import type { CheckedAction, Refusal } from './client/localVerdicts.js';
import type { RejectedEvent, SyncStatus } from './client/status.js';

export type { EventInput, TourlineClientOptions } from './client/core.js';
export type { RetryChanges } from './client/actions.js';
export type { RejectedEvent, SyncStatus } from './client/status.js';

type Args<K extends keyof Actions> = Actions[K] extends (...args: infer A) => unknown ? A : never;
type ReadArgs<K extends keyof Reads> = Reads[K] extends (...args: infer A) => unknown ? A : never;

/**
 * The driver app's side of Tourline. Every action is written to a durable outbox before the
 * call returns, pushed in order per delivery, retried with backoff until the service answers,
 * and shown at once in an optimistic view computed with the same rules the server runs.
 * This class only hands calls on: each job lives in its own file under `client/`.
 */
export class TourlineClient {
  readonly api: Parts['core']['api'];
  readonly options: TourlineClientOptions;
  readonly outbox: Outbox;
  readonly state: LocalState;
  readonly clientId: string;
  private readonly lifecycle: Lifecycle;

  private constructor(private readonly parts: Parts) {
    ({ api: this.api, options: this.options, outbox: this.outbox, state: this.state, clientId: this.clientId } = parts.core);
    this.lifecycle = new Lifecycle(parts);
  }

  /** Loads the outbox, the local tours and the cursor from storage. Nothing is sent before `start()`. */
  static async open(options: TourlineClientOptions): Promise<TourlineClient> {
    return new TourlineClient(await openParts(options));
  }

  // ---------- life cycle ----------
  /** Starts pushing the outbox and (unless `live: false`) following live changes. */
  start(options: { live?: boolean } = {}) {
    this.lifecycle.start(options);
  }
  stop() {
    this.lifecycle.stop();
  }
  /** Stops, waits for running work, and closes the storage. */
  close() {
    return this.lifecycle.close();
  }

  // ---------- reading ----------
  loadTours(...args: ReadArgs<'loadTours'>) {
    return this.parts.reads.loadTours(...args);
  }
  loadMasterData() {
    return this.parts.reads.loadMasterData();
  }
  loadTour(tourId: string) {
    return this.parts.reads.loadTour(tourId);
  }
  tourIds(): string[] {
    return this.parts.core.tourIds();
  }
  serverTour(tourId: string) {
    return this.parts.reads.serverTour(tourId);
  }
  view(tourId: string) {
    return this.parts.reads.view(tourId);
  }
  delivery(deliveryId: string) {
    return this.parts.reads.delivery(deliveryId);
  }
  localImage(reference: string) {
    return this.parts.reads.localImage(reference);
  }

  // ---------- driver actions: each resolves once it is durable in the outbox ----------
  scan(...args: Args<'scan'>) {
    return this.parts.actions.scan(...args);
  }
  unscan(...args: Args<'unscan'>) {
    return this.parts.actions.unscan(...args);
  }
  removeItem(...args: Args<'removeItem'>) {
    return this.parts.actions.removeItem(...args);
  }
  unremoveItem(...args: Args<'unremoveItem'>) {
    return this.parts.actions.unremoveItem(...args);
  }
  holdItem(...args: Args<'holdItem'>) {
    return this.parts.actions.holdItem(...args);
  }
  unholdItem(...args: Args<'unholdItem'>) {
    return this.parts.actions.unholdItem(...args);
  }
  holdDelivery(...args: Args<'holdDelivery'>) {
    return this.parts.actions.holdDelivery(...args);
  }
  resumeDelivery(...args: Args<'resumeDelivery'>) {
    return this.parts.actions.resumeDelivery(...args);
  }
  cancelDelivery(...args: Args<'cancelDelivery'>) {
    return this.parts.actions.cancelDelivery(...args);
  }
  assignCar(...args: Args<'assignCar'>) {
    return this.parts.actions.assignCar(...args);
  }
  setCredit(...args: Args<'setCredit'>) {
    return this.parts.actions.setCredit(...args);
  }
  removeCredit(...args: Args<'removeCredit'>) {
    return this.parts.actions.removeCredit(...args);
  }
  recordPayment(...args: Args<'recordPayment'>) {
    return this.parts.actions.recordPayment(...args);
  }
  createNote(...args: Args<'createNote'>) {
    return this.parts.actions.createNote(...args);
  }
  createImageNote(deliveryId: string, note: { image: Binary; contentType?: string; text?: string | null; authorCarId?: string | null }) {
    return this.parts.actions.createImageNote(deliveryId, note);
  }
  updateNote(...args: Args<'updateNote'>) {
    return this.parts.actions.updateNote(...args);
  }
  deleteNote(...args: Args<'deleteNote'>) {
    return this.parts.actions.deleteNote(...args);
  }
  setServiceValue(...args: Args<'setServiceValue'>) {
    return this.parts.actions.setServiceValue(...args);
  }
  clearServiceValue(...args: Args<'clearServiceValue'>) {
    return this.parts.actions.clearServiceValue(...args);
  }
  complete(...args: Args<'complete'>) {
    return this.parts.actions.complete(...args);
  }
  /** Any event of the sync protocol, for actions without a helper. */
  enqueue(input: EventInput) {
    return this.parts.actions.enqueue(input);
  }

  /**
   * The verdict an action would get now, without queueing it: the refusal its call would reject
   * with, or null when the rules accept it on what the device knows (the service may still refuse).
   */
  check(action: CheckedAction): Refusal | null {
    return this.parts.actions.verdicts.check(action);
  }

  // ---------- status ----------
  status(): SyncStatus {
    return this.parts.status.current();
  }

  /** Calls `listener` now and on every status change; returns the unsubscribe function. */
  subscribe(listener: (status: SyncStatus) => void): () => void {
    listener(this.status());
    return this.parts.core.events.on('status', listener);
  }

  on<K extends keyof ClientEvents>(event: K, listener: (value: ClientEvents[K]) => void) {
    return this.parts.core.events.on(event, listener);
  }

  rejected(): RejectedEvent[] {
    return this.parts.status.rejected();
  }

  /** The app has shown the rejection to the driver: forget it, and its photos. */
  async dismissRejected(id: string) {
    const entry = this.outbox.get(id);
    if (entry?.state === 'rejected') await this.parts.actions.discard(entry);
  }

  /**
   * Queues a refused action again, as a new action with `changes` merged in (event fields, a
   * completion's `acknowledgements`, a photo note's `text`); the refused one goes.
   */
  retryRejected(id: string, changes: RetryChanges = {}) {
    const entry = this.outbox.get(id);
    if (entry?.state !== 'rejected') throw new Error(`no refused action ${id}`);
    return this.parts.actions.retry(entry, changes);
  }

  /** Lets an old tour go from the local copy; refused while an action of it waits in the outbox. */
  forgetTour(tourId: string) {
    return this.parts.reads.forgetTour(tourId);
  }

  // ---------- syncing ----------
  /**
   * Pushes everything that can go now and catches up with the change feed. Throws what stopped
   * it (the entries stay queued); `start()` does the same in the background with backoff.
   */
  async sync(): Promise<SyncStatus> {
    await this.parts.sender.serial.run(() => this.parts.sender.flushAll());
    await this.pull();
    return this.status();
  }

  /** The app learned the network is back (NetInfo, `online` event): send at once instead of waiting for the backoff. */
  online() {
    this.parts.sender.offline = false;
    if (this.parts.feed.liveWanted) this.parts.feed.live.start();
    this.parts.sender.wake();
  }

  /** The app learned the network is gone: no request and no socket (nor its polling) until `online()`. */
  offline() {
    this.parts.sender.offline = true;
    this.parts.feed.live.stop();
    this.parts.status.online = false;
    this.parts.core.emitStatus();
  }

  /**
   * The app is in front again, or the driver signed in again: clears `needsSignIn` (and
   * `needsUpdate`, in case the service serves this release again) and sends at once.
   */
  resume() {
    this.parts.status.needsSignIn = false;
    this.parts.status.needsUpdate = false;
    this.parts.sender.wake();
  }

  /** Pulls /sync/changes to the head, then lets acknowledged entries go. */
  pull() {
    return this.parts.feed.pull();
  }

  /** Resolves when the outbox is empty and the view has settled, or rejects after `timeoutMs`. */
  async settled(timeoutMs = 30_000): Promise<SyncStatus> {
    const deadline = this.parts.core.now() + timeoutMs;
    for (;;) {
      const busy = this.outbox.all().some((e) => e.state !== 'rejected');
      if (!busy) return this.status();
      if (this.parts.core.now() > deadline) throw new Error(`not settled after ${timeoutMs} ms: ${JSON.stringify(this.status())}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}
