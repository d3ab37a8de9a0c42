import { isRefusal } from '../../shared/rules/eventResults.js';
import type { EventResult, SyncEvent } from '../../shared/schemas/sync.js';
import { backoffDelay } from '../backoff.js';
import type { Answer, NoteImageAction, OutboxEntry, Refusal } from '../outbox.js';
import { NetworkError, ProblemError } from '../problem.js';
import { clearTimer } from '../timers.js';
import { Serial, type ClientCore } from './core.js';
import type { Feed } from './feed.js';
import { toRejected, type Status } from './status.js';
import { isClientError, isOutOfReach, isRejection, isTooOld, problemRefusal, resultRefusal } from './verdicts.js';

/** A photo or signature the attachment store no longer has: the entry can never be sent. */
class AttachmentMissing extends Error {
  readonly refusal: Refusal;
  constructor(id: string) {
    super(`attachment ${id} is missing from the attachment store`);
    Object.setPrototypeOf(this, AttachmentMissing.prototype);
    this.refusal = { code: 'attachment_missing', message: this.message };
  }
}

/** Pushes the outbox: in order per delivery, batched, retried with backoff until the service answers. */
export class Sender {
  readonly serial = new Serial();
  started = false;
  /** Only one of the tabs sharing a storage sends (see Tabs); alone, a client always leads. */
  leading = true;
  private flushScheduled = false;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private retryAttempt = 0;
  /** The retry waits because the service was out of reach (not because it asked to slow down). */
  private waitingForNetwork = false;
  /**
   * The service was out of reach: it may come back restored from an older backup, so the feed
   * looks first, and what the service lost goes again before what waited (client/restore.ts).
   */
  private lookFirst = false;

  constructor(
    private readonly core: ClientCore,
    private readonly feed: Feed,
    private readonly status: Status,
  ) {}

  /** Rounds until nothing more can be sent; throws on a transient failure. */
  async flushAll() {
    while (await this.flushRound()) {
      /* next round: entries that waited behind a multipart one */
    }
  }

  /** The app said the network is gone (`offline()`): nothing is tried until `online()`. */
  offline = false;

  scheduleFlush() {
    if (!this.started || !this.leading || this.flushScheduled || this.retryTimer || this.offline) return;
    if (this.status.needsSignIn || this.status.needsUpdate) return;
    this.flushScheduled = true;
    void Promise.resolve().then(() => {
      this.flushScheduled = false;
      void this.serial.run(() => this.backgroundFlush());
    });
  }

  /** Sends at once, without waiting for the backoff timer (the network came back, the app is in front again). */
  wake() {
    this.retryTimer = clearTimer(this.retryTimer);
    this.status.nextRetryAt = null;
    this.retryAttempt = 0;
    this.scheduleFlush();
  }

  /**
   * The service answered something (the socket opened, a pull came back): what waits only for the
   * network goes at once, not after the rest of its backoff. A wait the service asked for
   * (429, 503 with Retry-After) is kept.
   */
  serviceReached() {
    if (this.retryTimer && this.waitingForNetwork && !this.offline) this.wake();
  }

  stop() {
    this.started = false;
    this.retryTimer = clearTimer(this.retryTimer);
    this.status.nextRetryAt = null;
  }

  private async backgroundFlush() {
    if (!this.started || this.retryTimer) return;
    try {
      // Only a look: a feed out of reach must not hold back what the push can deliver.
      if (this.lookFirst && this.core.kept.active) await this.feed.pull().catch(() => undefined);
      this.lookFirst = false;
      await this.flushAll();
      this.retryAttempt = 0;
      if (this.core.outbox.all().some((e) => e.state === 'acknowledged')) await this.feed.pull();
    } catch (error) {
      // Only the driver (signing in) or an update of the app helps; the outbox keeps everything meanwhile.
      if (this.status.needsSignIn || this.status.needsUpdate) return;
      this.waitingForNetwork = error instanceof NetworkError;
      this.lookFirst ||= isOutOfReach(error);
      const delay = backoffDelay(
        this.retryAttempt++,
        this.core.random,
        this.core.policy,
        error instanceof ProblemError ? error.retryAfterMs : undefined,
      );
      this.status.setNextRetry(this.core.now() + delay);
      this.retryTimer = setTimeout(() => {
        this.retryTimer = undefined;
        this.status.nextRetryAt = null;
        this.scheduleFlush();
      }, delay);
    }
  }

  /**
   * One round: the longest prefix of pending events that can go in one push, in order per
   * delivery, plus the first multipart entry (completion, note image) of each delivery with
   * nothing before it. Later entries of a delivery wait behind its multipart entry.
   */
  private async flushRound(): Promise<boolean> {
    if (!this.leading) return false;
    const batch: OutboxEntry[] = [];
    const multipart: OutboxEntry[] = [];
    const blocked = new Set<string>();
    const inBatch = new Set<string>();
    for (const entry of this.core.outbox.pending()) {
      if (blocked.has(entry.orderKey)) continue;
      if (entry.action.kind === 'event' && batch.length < this.core.maxBatch) {
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
        this.core.sending = sent.catch(() => undefined);
        await sent;
      } catch (error) {
        if (isOutOfReach(error) || isTooOld(error)) throw error;
        failure ??= error;
      }
    }
    if (failure) throw failure;
    this.status.reached(true);
    return true;
  }

  private async pushBatch(entries: OutboxEntry[]): Promise<void> {
    const { core } = this;
    const events = entries.map((e) => (e.action as { event: SyncEvent }).event);
    let results: EventResult[];
    try {
      const device = await core.health?.forPush();
      let answer;
      ({ results, device: answer } = await core.api.push({ clientId: core.clientId, events, ...(device && { device }) }));
      core.health?.answered(answer);
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
          const stuck = new Set(
            entries
              .slice(0, half)
              .filter((e) => e.state === 'pending')
              .map((e) => e.orderKey),
          );
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
    const answers = entries.map((entry): Answer => {
      const result = byId.get(entry.id)!;
      return isRefusal(result)
        ? { entry, refusal: resultRefusal(result) }
        : { entry, seq: result.seq ?? (pushSeq >= 0 ? pushSeq : undefined) };
    });
    // The whole answer in one batched write, then the handles.
    await core.outbox.record(answers, core.generation, core.now());
    for (const answer of answers) {
      if (answer.refusal) this.reportRejection(answer.entry);
      else core.outcomes.settle(answer.entry.id, { status: 'applied' });
    }
    // The live feed may have brought these changes before the answer came.
    core.emitChange(...(await this.feed.settledTours()));
    core.emitChange(...entries.map((e) => core.tourOfAction(e.action)));
  }

  private async sendMultipart(entry: OutboxEntry) {
    const { core } = this;
    const action = entry.action;
    try {
      if (action.kind === 'completion') {
        const answer = await core.api.complete(action.deliveryId, {
          customerSignature: await this.attachment(action.customerSignature),
          driverSignature: await this.attachment(action.driverSignature),
          // Its time goes along, so that a completion sent hours later counts when it happened.
          acknowledgements: { ...action.acknowledgements, occurredAt: action.occurredAt },
        });
        if (answer?.delivery?.id !== action.deliveryId) throw new NetworkError('not an answer of the service: no completed delivery');
        await this.acknowledge(entry);
        await this.forget(action.customerSignature, action.driverSignature);
      } else if (action.kind === 'noteImage') {
        await this.sendNoteImage(entry, action);
      }
    } catch (error) {
      if (isRejection(error) || error instanceof AttachmentMissing) {
        await this.rejectEntry(entry, error instanceof AttachmentMissing ? error.refusal : problemRefusal(error as ProblemError));
        return;
      }
      await this.failed([entry], error);
      throw error;
    }
    core.emitChange(core.tourOfAction(action));
  }

  /**
   * Upload first, remembering its answer in the entry before anything else; then, if the upload
   * did not take the text, a `note.update` with its own stable event id adds it. A resend after a
   * lost answer therefore never creates a second note or uploads twice once the answer was seen;
   * the upload carries the client's note id so the service can recognise a repeat as well.
   */
  private async sendNoteImage(entry: OutboxEntry, action: NoteImageAction) {
    const { core } = this;
    let uploaded = action.uploaded;
    if (!uploaded) {
      const fields: Record<string, string> = { noteId: action.noteId, clientEventId: entry.id };
      if (action.text) fields.text = action.text;
      if (action.authorCarId) fields.authorCarId = action.authorCarId;
      const answer = await core.api.uploadNoteImage(action.deliveryId, {
        file: await this.attachment(action.image),
        contentType: action.contentType,
        fields,
      });
      if (!answer || !('note' in answer)) throw new NetworkError('not an answer of the service: no note');
      const { note } = answer;
      if (!note) {
        // A repeat of an upload whose note was deleted since (on another device, say): it is done.
        await this.acknowledge(entry);
        await this.forget(action.image);
        return;
      }
      uploaded = { noteId: note.id, imageAttachment: note.imageAttachment, text: note.text };
      await core.outbox.update(entry, { action: { ...action, uploaded } });
      // The service has the photo: its copy on the phone has done its job.
      await this.forget(action.image);
      if (note.id !== action.noteId) await core.outbox.renameNote(action.noteId, note.id);
    }
    // Only when the upload took no text at all: a repeat answers the note as it is now, whose
    // text another device may have changed since, and that change stands.
    if (action.text && !uploaded.text) {
      const event: SyncEvent = {
        type: 'note.update',
        eventId: action.followUpEventId,
        occurredAt: action.occurredAt,
        deliveryId: action.deliveryId,
        noteId: uploaded.noteId,
        text: action.text,
      };
      const { results } = await core.api.push({ clientId: core.clientId, events: [event] });
      const result = results[0];
      if (result && isRefusal(result)) {
        await this.rejectEntry(entry, resultRefusal(result));
        return;
      }
    }
    await this.acknowledge(entry);
  }

  private async attachment(id: string) {
    const data = await this.core.attachments.get(id);
    if (data === undefined) throw new AttachmentMissing(id);
    return data;
  }

  private forget(...ids: string[]) {
    return this.core.letAttachmentsGo(ids);
  }

  private async acknowledge(entry: OutboxEntry, seq?: number) {
    await this.core.outbox.acknowledge(entry, this.core.generation, seq);
    this.core.outcomes.settle(entry.id, { status: 'applied' });
  }

  private async rejectEntry(entry: OutboxEntry, refusal: Refusal) {
    await this.core.outbox.reject(entry, refusal, this.core.now());
    this.reportRejection(entry);
  }

  private reportRejection(entry: OutboxEntry) {
    const rejection = toRejected(entry, this.core);
    this.core.outcomes.settle(entry.id, { status: 'rejected', rejection });
    this.core.events.emit('rejected', rejection);
    this.core.emitChange(this.core.tourOfAction(entry.action));
    this.core.emitStatus();
  }

  /** Kept in memory only: a failed attempt rewrites nothing in storage. */
  private async failed(entries: OutboxEntry[], error: unknown) {
    const message = error instanceof Error ? error.message : String(error);
    for (const entry of entries) entry.lastError = message;
    this.status.recordError(error);
  }
}
