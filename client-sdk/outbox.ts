import type { Problem } from '../shared/schemas/common.js';
import type { CompleteDeliveryAcknowledgements } from '../shared/schemas/deliveries.js';
import type { SyncEvent } from '../shared/schemas/sync.js';
import type { AcknowledgedActions, KeptAction } from './acknowledged.js';
import type { JsonStore } from './storage/keyValue.js';

export interface CompletionAction {
  kind: 'completion';
  deliveryId: string;
  occurredAt: string;
  /** Carries `clientEventId` = the entry id, so a replay answers 200 instead of 400. */
  acknowledgements: CompleteDeliveryAcknowledgements & { clientEventId: string };
  /** Attachment ids of the PNG signatures (see AttachmentStore). */
  customerSignature: string;
  driverSignature: string;
}

export interface NoteImageAction {
  kind: 'noteImage';
  deliveryId: string;
  noteId: string;
  occurredAt: string;
  /** Attachment id of the image (see AttachmentStore). */
  image: string;
  contentType: string;
  text: string | null;
  authorCarId: string | null;
  /** Event id of the follow-up `note.update` that adds the text when the upload did not take it. */
  followUpEventId: string;
  /** The upload's answer, stored before anything else is sent: a resend never uploads twice. */
  uploaded?: { noteId: string; imageAttachment: string | null; text: string | null };
}

export type OutboxAction = { kind: 'event'; event: SyncEvent } | CompletionAction | NoteImageAction;

/** Why the service refused an entry. */
export interface Refusal {
  code: string;
  message: string;
  reason?: string;
  errors?: Problem['errors'];
}

/**
 * pending: not yet answered by the service. acknowledged: applied (or a duplicate), kept in the
 * optimistic view until the change feed has caught up past it. rejected: the service said no.
 */
export type EntryState = 'pending' | 'acknowledged' | 'rejected';

export interface OutboxEntry {
  id: string;
  seq: number;
  /** Entries with the same key reach the service in `seq` order: the delivery, or the note. */
  orderKey: string;
  createdAt: number;
  state: EntryState;
  attempts: number;
  action: OutboxAction;
  lastError?: string;
  rejection?: Refusal & { at: number };
  /** In-memory only: the catch-up generation the acknowledgement happened in. */
  ackGeneration?: number;
  /** The change-feed seq that carries the acknowledged event, when the service named it. */
  ackSeq?: number;
}

const PREFIX = 'outbox/';
/**
 * The seq orders the key; the id makes it unique, so two tabs (or processes) on one storage,
 * each counting seqs on its own, never write over each other's entries.
 */
const keyOf = (entry: OutboxEntry) => `${PREFIX}${String(entry.seq).padStart(12, '0')}-${entry.id}`;

/** The photos and signatures an action still holds in the attachment store. */
export function attachmentsOf(action: OutboxAction): string[] {
  if (action.kind === 'completion') return [action.customerSignature, action.driverSignature];
  if (action.kind === 'noteImage' && !action.uploaded) return [action.image];
  return [];
}

export function orderKeyOf(action: OutboxAction): string {
  if (action.kind !== 'event') return `delivery:${action.deliveryId}`;
  const e = action.event;
  if ('deliveryId' in e && e.deliveryId) return `delivery:${e.deliveryId}`;
  if (e.type === 'note.update' || e.type === 'note.delete') return `note:${e.noteId}`;
  if (e.type === 'scan') return `item:${e.deliveryItemId}`;
  return 'global';
}

/** What another tab (or process) on the same storage changed in the outbox, as `reload` found it. */
export interface Reloaded {
  added: OutboxEntry[];
  changed: OutboxEntry[];
  removed: OutboxEntry[];
}

/** The service's answer for one entry: applied (with the change-feed seq that carries it, when known), or refused. */
export type Answer = { entry: OutboxEntry; seq?: number; refusal?: undefined } | { entry: OutboxEntry; refusal: Refusal };

const STATES: EntryState[] = ['pending', 'acknowledged', 'rejected'];
/** What an entry must at least look like to be loaded; anything else is set aside. */
function isEntry(value: unknown): boolean {
  const v = value as Partial<OutboxEntry> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.id === 'string' &&
    typeof v.seq === 'number' &&
    typeof v.orderKey === 'string' &&
    STATES.includes(v.state as EntryState) &&
    typeof v.action === 'object' &&
    v.action !== null &&
    typeof v.action.kind === 'string'
  );
}

/** The stored form of an entry: without what only lives in memory. */
const stored = ({ ackGeneration: _generation, lastError: _error, ...entry }: OutboxEntry) => entry;
const bySeq = (a: OutboxEntry, b: OutboxEntry) => a.seq - b.seq || a.createdAt - b.createdAt;

/**
 * The durable queue of driver actions. One storage key per entry, so a change of one entry is
 * one write, and the answers of a push are one batch. Acknowledged entries are also indexed on
 * their own, so recording an answer and letting entries go cost the same however long the queue.
 */
export class Outbox {
  /** In seq order. */
  private entries = new Map<string, OutboxEntry>();
  /** Acknowledged entries, waiting for the local copy to hold their changes. */
  private readonly acknowledgedEntries = new Set<OutboxEntry>();
  /** Acknowledged entries whose change-feed seq the service did not name (a photo, a completion). */
  private readonly unsequenced = new Set<OutboxEntry>();
  private nextSeq = 1;
  /** Called after every write, so that other tabs on the same storage can look again. */
  onWrite: () => void = () => undefined;
  /** Ids this outbox removed while a reload was reading: a stale read must not bring them back. */
  private removedDuringReload: Set<string> | undefined;
  /** Keeps what the service acknowledged, for a service restored from an older backup. */
  private keeper: AcknowledgedActions | undefined;

  private constructor(private readonly store: JsonStore) {}

  /**
   * Loads the entries; one that cannot be read is set aside (see JsonStore) and the rest loads.
   * Entries stored under the older key form (`outbox/<seq>`, without the id) move to the current one.
   */
  static async load(store: JsonStore): Promise<Outbox> {
    const outbox = new Outbox(store);
    const moves: [string, unknown][] = [];
    const loaded = await store.entries<OutboxEntry>(PREFIX, isEntry);
    for (const [key, entry] of loaded) {
      if (key !== keyOf(entry)) moves.push([keyOf(entry), entry], [key, undefined]);
      outbox.insert({ ...entry, ackGeneration: entry.state === 'acknowledged' ? 0 : undefined });
    }
    if (moves.length) await store.batch(moves);
    outbox.sort();
    return outbox;
  }

  /** Resolves once the entry is durable. */
  async add(id: string, action: OutboxAction, now: number, orderKey = orderKeyOf(action)): Promise<OutboxEntry> {
    const entry: OutboxEntry = { id, seq: this.nextSeq++, orderKey, createdAt: now, state: 'pending', attempts: 0, action };
    await this.persist(entry);
    // A reload may have found it in storage while it was being written.
    return this.entries.get(id) ?? this.insert(entry);
  }

  /**
   * Reads the outbox again from storage and takes over what other tabs on the same storage
   * wrote: their new entries, the answers the sending tab recorded, the entries it let go.
   */
  async reload(): Promise<Reloaded> {
    const before = new Set(this.entries.values());
    const removedMeanwhile = new Set<string>();
    this.removedDuringReload = removedMeanwhile;
    let read: [string, OutboxEntry][];
    try {
      read = await this.store.entries<OutboxEntry>(PREFIX, isEntry);
    } finally {
      this.removedDuringReload = undefined;
    }
    const result: Reloaded = { added: [], changed: [], removed: [] };
    const seen = new Set<string>();
    for (const [, entry] of read) {
      seen.add(entry.id);
      if (removedMeanwhile.has(entry.id)) continue;
      const known = this.entries.get(entry.id);
      if (!known) {
        result.added.push(this.insert({ ...entry, ackGeneration: entry.state === 'acknowledged' ? 0 : undefined }));
      } else if (known.state !== entry.state || JSON.stringify(known.action) !== JSON.stringify(entry.action)) {
        const { state, action, rejection, ackSeq } = entry;
        this.apply(known, {
          state,
          action,
          rejection,
          ackSeq,
          ackGeneration: state === 'acknowledged' ? (known.ackGeneration ?? 0) : undefined,
        });
        result.changed.push(known);
      }
    }
    // Only entries that were here when the read began: one added since is not in the read.
    for (const entry of before) {
      if (!seen.has(entry.id) && this.entries.get(entry.id) === entry) {
        this.forget(entry);
        result.removed.push(entry);
      }
    }
    if (result.added.length) this.sort();
    return result;
  }

  all(): OutboxEntry[] {
    return [...this.entries.values()];
  }
  pending() {
    return this.all().filter((e) => e.state === 'pending');
  }
  rejected() {
    return this.all().filter((e) => e.state === 'rejected');
  }
  /** What the optimistic view adds on top of the server's state. */
  unsettled() {
    return this.all().filter((e) => e.state !== 'rejected');
  }
  get(id: string) {
    return this.entries.get(id);
  }
  get size() {
    return this.entries.size;
  }

  async update(entry: OutboxEntry, patch: Partial<OutboxEntry>) {
    await this.persist({ ...entry, ...patch });
    this.apply(entry, patch);
  }

  acknowledge(entry: OutboxEntry, generation: number, seq?: number) {
    return this.record([{ entry, seq }], generation, 0);
  }
  reject(entry: OutboxEntry, refusal: Refusal, now: number) {
    return this.record([{ entry, refusal }], 0, now);
  }

  /**
   * The service's answers for several entries, in one batched write. An entry acknowledged with a
   * seq also gives it to the entries acknowledged before without one (a photo, a completion):
   * they committed before it was sent, so once the copy holds its changes it holds theirs, and a
   * later undo (the photo's note deleted) must not bring them back.
   */
  async record(answers: Answer[], generation: number, now: number) {
    const patches = new Map<OutboxEntry, Partial<OutboxEntry>>();
    const waiting = new Set(this.unsequenced);
    for (const answer of answers) {
      if (answer.refusal) {
        const { code, message, reason, errors } = answer.refusal;
        patches.set(answer.entry, {
          state: 'rejected',
          rejection: { code, message, at: now, ...(reason ? { reason } : {}), ...(errors ? { errors } : {}) },
        });
        continue;
      }
      const { entry, seq } = answer;
      patches.set(entry, { state: 'acknowledged', ackGeneration: generation, ackSeq: seq, lastError: undefined });
      if (seq === undefined) {
        waiting.add(entry);
        continue;
      }
      for (const earlier of waiting) if (earlier !== entry) patches.set(earlier, { ...patches.get(earlier), ackSeq: seq });
      waiting.clear();
    }
    const acknowledged = [...patches]
      .filter(([, patch]) => patch.state === 'acknowledged')
      .map(([entry, patch]) => ({ ...entry, ...patch }));
    const kept = this.keeper?.writesFor(acknowledged) ?? [];
    await this.store.batch([
      ...[...patches].map(([entry, patch]): [string, unknown] => [keyOf(entry), stored({ ...entry, ...patch })]),
      ...kept,
    ]);
    for (const [entry, patch] of patches) this.apply(entry, patch);
    this.onWrite();
    await this.keeper?.afterWrite(kept);
  }

  /** Acknowledgements are kept by `keeper` from now on; new entries are queued after everything it kept. */
  keepAcknowledged(keeper: AcknowledgedActions) {
    this.keeper = keeper;
    this.nextSeq = Math.max(this.nextSeq, keeper.highestSeq + 1);
    keeper.pending = (id) => this.entries.get(id)?.state === 'pending';
  }

  /**
   * Queues kept actions again, each under its own id and seq (so in its old place before what
   * was queued after it), in one batched write.
   */
  async requeue(again: KeptAction[]): Promise<OutboxEntry[]> {
    if (!again.length) return [];
    const entries = again.map(({ id, seq, orderKey, createdAt, action }): OutboxEntry => {
      const known = this.entries.get(id);
      return { ...known, id, seq, orderKey, createdAt, action, state: 'pending', attempts: 0, ackSeq: undefined, ackGeneration: undefined };
    });
    await this.store.batch(entries.map((entry) => [keyOf(entry), stored(entry)]));
    const requeued = entries.map((entry) => {
      const known = this.entries.get(entry.id);
      if (!known) return this.insert(entry);
      this.apply(known, entry);
      return known;
    });
    this.sort();
    this.onWrite();
    return requeued;
  }

  /**
   * Lets go, in one batched write, of acknowledged entries that the local copy of the server's
   * state already contains: the changes up to their seq are applied (`lastSeq`), or a pull that
   * started after their acknowledgement has caught up (acknowledged before `generation`).
   */
  async settle({ lastSeq, generation = 0 }: { lastSeq: number; generation?: number }): Promise<number> {
    const settled = [...this.acknowledgedEntries].filter(
      (e) => (e.ackSeq !== undefined && e.ackSeq <= lastSeq) || (e.ackGeneration ?? 0) < generation,
    );
    await this.removeAll(settled);
    return settled.length;
  }

  /** Lets go of entries in one batched write. */
  async removeAll(entries: OutboxEntry[]) {
    if (!entries.length) return;
    await this.store.batch(entries.map((e) => [keyOf(e), undefined]));
    for (const entry of entries) this.removed(entry);
    this.onWrite();
  }

  async remove(entry: OutboxEntry) {
    await this.store.delete(keyOf(entry));
    this.removed(entry);
    this.onWrite();
  }

  /** After the service gave a note another id than the local one, later events follow the note. */
  async renameNote(from: string, to: string) {
    for (const entry of this.pending()) {
      const action = entry.action;
      if (action.kind === 'event' && 'noteId' in action.event && action.event.noteId === from) {
        await this.update(entry, { action: { kind: 'event', event: { ...action.event, noteId: to } } });
      }
      // The service keeps only acknowledged ids of the delivery's notes as they are.
      const acknowledged = action.kind === 'completion' ? action.acknowledgements.acknowledgedNoteIds : undefined;
      if (action.kind === 'completion' && acknowledged?.includes(from)) {
        const acknowledgements = { ...action.acknowledgements, acknowledgedNoteIds: acknowledged.map((id) => (id === from ? to : id)) };
        await this.update(entry, { action: { ...action, acknowledgements } });
      }
    }
  }

  private async persist(entry: OutboxEntry) {
    await this.store.set(keyOf(entry), stored(entry));
    this.onWrite();
  }

  private insert(entry: OutboxEntry): OutboxEntry {
    this.entries.set(entry.id, entry);
    this.nextSeq = Math.max(this.nextSeq, entry.seq + 1);
    this.index(entry);
    return entry;
  }

  private apply(entry: OutboxEntry, patch: Partial<OutboxEntry>) {
    Object.assign(entry, patch);
    this.index(entry);
  }

  /** Keeps the indexes of acknowledged entries current after a change of `entry`. */
  private index(entry: OutboxEntry) {
    const acknowledged = entry.state === 'acknowledged';
    if (acknowledged) this.acknowledgedEntries.add(entry);
    else this.acknowledgedEntries.delete(entry);
    if (acknowledged && entry.ackSeq === undefined) this.unsequenced.add(entry);
    else this.unsequenced.delete(entry);
  }

  private removed(entry: OutboxEntry) {
    this.removedDuringReload?.add(entry.id);
    this.forget(entry);
  }

  private forget(entry: OutboxEntry) {
    if (this.entries.get(entry.id) === entry) this.entries.delete(entry.id);
    this.acknowledgedEntries.delete(entry);
    this.unsequenced.delete(entry);
  }

  private sort() {
    this.entries = new Map([...this.entries.values()].sort(bySeq).map((e) => [e.id, e]));
  }
}
