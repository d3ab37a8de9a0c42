import type { Change } from '../../shared/schemas/sync.js';
import { attachmentsOf, type OutboxEntry } from '../outbox.js';
import { LiveChanges, detectWebSocket } from '../live.js';
import { Serial, type ClientCore } from './core.js';
import type { Status } from './status.js';
import { serviceAnswered } from './verdicts.js';

/** Follows the service's change feed (live socket, or pulls) into the local copy, and lets settled outbox entries go. */
export class Feed {
  readonly live: LiveChanges;
  readonly serial = new Serial();
  status!: Status;
  /** The app started the client with live changes: `online()` opens the socket again after `offline()`. */
  liveWanted = false;
  /** Sends kept acknowledged actions again when the refused cursor says the service lost them (client/restore.ts). */
  sendAgain: (refusal: unknown) => Promise<string[]> = async () => [];

  constructor(private readonly core: ClientCore) {
    const { options } = core;
    this.live = new LiveChanges({
      baseUrl: options.baseUrl,
      webSocket: options.webSocket === null ? undefined : (options.webSocket ?? detectWebSocket()),
      token: async (forceRefresh) => options.getToken({ forceRefresh }),
      cursor: () => core.state.cursor,
      ingest: (changes, cursor) => this.serial.run(() => this.ingest(changes, cursor)),
      pull: () => this.pull(),
      onConnected: (connected) => {
        if (connected) this.status.answered();
        core.emitStatus();
      },
      onError: (error) => this.status.recordError(error),
      onDevice: (answer) => core.health?.answered(answer),
      onCursorRefused: () =>
        void this.pull()
          .then(() => this.live.restart())
          .catch((error) => this.status.recordError(error)),
      pollIntervalMs: options.pollIntervalMs ?? 5000,
      heartbeatMs: options.heartbeatMs ?? 25_000,
      backoff: core.policy,
      random: core.random,
    });
  }

  /** Pulls /sync/changes to the head, then lets acknowledged entries go: the server state now contains them. */
  pull(): Promise<void> {
    return this.serial.run(async () => {
      const { core } = this;
      // Entries acknowledged before this pull started are in the server state it reads.
      let generation = ++core.generation;
      let resent: string[] = [];
      try {
        for (;;) {
          const page = await core.api.changes({ since: core.state.cursor, limit: 1000 });
          await this.ingest(page.changes, page.cursor);
          if (!page.hasMore) break;
        }
      } catch (error) {
        const cursorRefused = serviceAnswered(error, 400) && core.state.cursor !== null;
        if (!cursorRefused) {
          this.status.recordError(error);
          throw error;
        }
        resent = await this.sendAgain(error);
        // What was acknowledged until now is in the tours the resync reads.
        generation = ++core.generation;
        await this.resync();
      }
      this.status.answered();
      this.status.lastSyncAt = core.now();
      // The service answers again; an error stays news only while an entry waits to be sent again.
      if (!core.outbox.pending().some((e) => e.lastError)) this.status.lastError = null;
      core.emitChange(...(await this.settledTours(generation)));
      for (const id of resent) core.heldByCopy.delete(id);
      core.emitStatus();
    });
  }

  /** Lets go of the acknowledged entries that the local copy of the server's state now holds; answers the tours whose view that changes. */
  async settledTours(generation?: number): Promise<string[]> {
    return (await this.core.outbox.settle({ lastSeq: this.core.state.lastSeq, generation })) ? this.core.tourIds() : [];
  }

  /**
   * This client's entries that the changes name as applied (`Change.eventIds`): the copy holds
   * their effect once it took the changes, also when the answer to their push was lost. A photo's
   * entry stays: it may still owe its text, which the sender adds after the upload.
   */
  private holdNamed(changes: Change[]): OutboxEntry[] {
    const held: OutboxEntry[] = [];
    for (const id of changes.flatMap((c) => c.eventIds ?? [])) {
      const entry = this.core.outbox.get(id);
      if (!entry || entry.state === 'rejected' || entry.action.kind === 'noteImage') continue;
      this.core.heldByCopy.add(id);
      held.push(entry);
    }
    return held;
  }

  /** Removes the entries the copy holds now (one write), settling their handles and letting their signatures go. */
  private async settleNamed(entries: OutboxEntry[]): Promise<boolean> {
    const { outbox, outcomes, heldByCopy } = this.core;
    await outbox.removeAll(entries);
    for (const entry of entries) {
      heldByCopy.delete(entry.id);
      outcomes.settle(entry.id, { status: 'applied' });
      await this.core.letAttachmentsGo(attachmentsOf(entry.action));
    }
    return entries.length > 0;
  }

  async refetchTour(tourId: string) {
    try {
      await this.core.state.putTour(await this.core.api.tour(tourId));
    } catch (error) {
      if (serviceAnswered(error, 404)) await this.core.state.dropTour(tourId);
      else throw error;
    }
    this.core.emitChange(tourId);
  }

  /** Takes a cursor of "now" before the first tour read, so nothing between the two is missed. */
  async ensureCursor() {
    if (this.core.state.cursor !== null) return;
    const head = await this.headCursor();
    // A server without /sync/cursor: walking the feed from the start ends at the same place.
    if (head === null) await this.pull();
    else await this.core.state.setCursor(head);
  }

  private async ingest(changes: Change[], cursor: string) {
    // Changes may hold what a send under way wrote before its answer came: applied to the copy
    // while the entry still counts as pending, the view would show it twice. So they wait for the
    // answer, whose seq then lets the entry go.
    await this.core.sending;
    // Marked in the same turn as the copy takes the changes: no view in between counts them twice.
    const named = this.holdNamed(changes);
    const outcome = await this.core.state.applyChanges(changes, cursor);
    this.status.lastPullAt = this.core.now();
    for (const tourId of outcome.refetch) await this.refetchTour(tourId).catch((error) => this.status.recordError(error));
    // Before telling anyone: an entry the server's state now holds must not count twice in the view.
    const settled = await this.settleNamed(named);
    const touched = [...outcome.changedTours, ...outcome.refetch, ...(await this.settledTours()), ...(settled ? this.core.tourIds() : [])];
    if (touched.length) this.core.emitChange(...touched);
  }

  private async headCursor(): Promise<string | null> {
    try {
      return (await this.core.api.cursor()).cursor;
    } catch (error) {
      if (serviceAnswered(error, 404)) return null;
      throw error;
    }
  }

  /** The cursor is no longer valid (the log was pruned or the database reset): read everything again. */
  private async resync() {
    const tourIds = this.core.tourIds();
    await this.core.state.setCursor(await this.headCursor(), -1);
    for (const id of tourIds) await this.refetchTour(id);
  }
}
