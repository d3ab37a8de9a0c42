import type { Problem } from '../shared/schemas/common.js';
import type { CompleteDeliveryAcknowledgements } from '../shared/schemas/deliveries.js';
import type { SyncEvent } from '../shared/schemas/sync.js';
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
export interface Refusal { code: string; message: string; reason?: string; errors?: Problem['errors'] }

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
  /** In-memory only: the storage key the entry was loaded from. */
  key?: string;
}

const PREFIX = 'outbox/';
/**
 * The seq orders the key; the id makes it unique, so two tabs (or processes) on one storage,
 * each counting seqs on its own, never write over each other's entries.
 */
const keyOf = (entry: OutboxEntry) => entry.key ?? `${PREFIX}${String(entry.seq).padStart(12, '0')}-${entry.id}`;

export function orderKeyOf(action: OutboxAction): string {
  if (action.kind !== 'event') return `delivery:${action.deliveryId}`;
  const e = action.event;
  if ('deliveryId' in e && e.deliveryId) return `delivery:${e.deliveryId}`;
  if (e.type === 'note.update' || e.type === 'note.delete') return `note:${e.noteId}`;
  if (e.type === 'scan') return `item:${e.deliveryItemId}`;
  return 'global';
}

/** What another tab (or process) on the same storage changed in the outbox, as `reload` found it. */
export interface Reloaded { added: OutboxEntry[]; changed: OutboxEntry[]; removed: OutboxEntry[] }

/** The durable queue of driver actions. One storage key per entry: every change of an entry is one write. */
export class Outbox {
  private readonly entries: OutboxEntry[] = [];
  private nextSeq = 1;
  /** Called after every write, so that other tabs on the same storage can look again. */
  onWrite: () => void = () => undefined;
  /** Ids this outbox removed while a reload was reading: a stale read must not bring them back. */
  private removedDuringReload: Set<string> | undefined;

  private constructor(private readonly store: JsonStore) {}

  static async load(store: JsonStore): Promise<Outbox> {
    const outbox = new Outbox(store);
    for (const [key, entry] of await store.entries<OutboxEntry>(PREFIX)) {
      outbox.entries.push({ ...entry, key, ackGeneration: entry.state === 'acknowledged' ? 0 : undefined });
      outbox.nextSeq = Math.max(outbox.nextSeq, entry.seq + 1);
    }
    outbox.entries.sort((a, b) => a.seq - b.seq || a.createdAt - b.createdAt);
    return outbox;
  }

  /** Resolves once the entry is durable. */
  async add(id: string, action: OutboxAction, now: number, orderKey = orderKeyOf(action)): Promise<OutboxEntry> {
    const entry: OutboxEntry = { id, seq: this.nextSeq++, orderKey, createdAt: now, state: 'pending', attempts: 0, action };
    await this.persist(entry);
    // A reload may have found it in storage while it was being written.
    const loaded = this.get(id);
    if (loaded) return loaded;
    this.entries.push(entry);
    return entry;
  }

  /**
   * Reads the outbox again from storage and takes over what other tabs on the same storage
   * wrote: their new entries, the answers the sending tab recorded, the entries it let go.
   */
  async reload(): Promise<Reloaded> {
    const before = new Set(this.entries);
    const removedMeanwhile = new Set<string>();
    this.removedDuringReload = removedMeanwhile;
    let stored: [string, OutboxEntry][];
    try {
      stored = await this.store.entries<OutboxEntry>(PREFIX);
    } finally {
      this.removedDuringReload = undefined;
    }
    const result: Reloaded = { added: [], changed: [], removed: [] };
    const seen = new Set<string>();
    for (const [key, entry] of stored) {
      seen.add(entry.id);
      if (removedMeanwhile.has(entry.id)) continue;
      this.nextSeq = Math.max(this.nextSeq, entry.seq + 1);
      const known = this.get(entry.id);
      if (!known) {
        const added = { ...entry, key, ackGeneration: entry.state === 'acknowledged' ? 0 : undefined };
        this.entries.push(added);
        result.added.push(added);
      } else if (known.state !== entry.state || JSON.stringify(known.action) !== JSON.stringify(entry.action)) {
        const { state, action, rejection, ackSeq } = entry;
        Object.assign(known, { state, action, rejection, ackSeq, ackGeneration: state === 'acknowledged' ? known.ackGeneration ?? 0 : undefined });
        result.changed.push(known);
      }
    }
    // Only entries that were here when the read began: one added since is not in the read.
    for (const entry of before) {
      if (!seen.has(entry.id) && this.entries.includes(entry)) {
        this.entries.splice(this.entries.indexOf(entry), 1);
        result.removed.push(entry);
      }
    }
    if (result.added.length) this.entries.sort((a, b) => a.seq - b.seq || a.createdAt - b.createdAt);
    return result;
  }

  all(): readonly OutboxEntry[] { return this.entries; }
  pending() { return this.entries.filter((e) => e.state === 'pending'); }
  rejected() { return this.entries.filter((e) => e.state === 'rejected'); }
  /** What the optimistic view adds on top of the server's state. */
  unsettled() { return this.entries.filter((e) => e.state !== 'rejected'); }
  get(id: string) { return this.entries.find((e) => e.id === id); }

  async update(entry: OutboxEntry, patch: Partial<OutboxEntry>) {
    const next = { ...entry, ...patch };
    await this.persist(next);
    Object.assign(entry, patch);
  }

  async acknowledge(entry: OutboxEntry, generation: number, seq?: number) {
    await this.update(entry, { state: 'acknowledged', ackGeneration: generation, ackSeq: seq, lastError: undefined });
    if (seq === undefined) return;
    // Entries acknowledged before without a seq (a photo, a completion) committed before this one
    // was sent: once the copy holds its changes it holds theirs, and a later undo (the photo's
    // note deleted) must not bring them back.
    for (const earlier of this.entries) {
      if (earlier.state === 'acknowledged' && earlier.ackSeq === undefined) await this.update(earlier, { ackSeq: seq });
    }
  }

  reject(entry: OutboxEntry, { code, message, reason, errors }: Refusal, now: number) {
    return this.update(entry, { state: 'rejected', rejection: { code, message, at: now, ...(reason ? { reason } : {}), ...(errors ? { errors } : {}) } });
  }

  /**
   * Drops acknowledged entries that the local copy of the server's state already contains: the
   * changes up to their seq are applied (`lastSeq`), or a pull that started after their
   * acknowledgement has caught up (acknowledged before `generation`).
   */
  async settle({ lastSeq, generation = 0 }: { lastSeq: number; generation?: number }): Promise<number> {
    const settled = this.entries.filter((e) => e.state === 'acknowledged'
      && ((e.ackSeq !== undefined && e.ackSeq <= lastSeq) || (e.ackGeneration ?? 0) < generation));
    for (const entry of settled) await this.remove(entry);
    return settled.length;
  }

  async remove(entry: OutboxEntry) {
    await this.store.delete(keyOf(entry));
    this.removedDuringReload?.add(entry.id);
    const index = this.entries.indexOf(entry);
    if (index >= 0) this.entries.splice(index, 1);
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
    const { ackGeneration: _memoryOnly, key: _key, lastError: _error, ...stored } = entry;
    await this.store.set(keyOf(entry), stored);
    this.onWrite();
  }
}
