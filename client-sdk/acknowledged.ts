import type { AttachmentStore } from './attachments.js';
import type { OutboxAction, OutboxEntry } from './outbox.js';
import type { JsonStore } from './storage/keyValue.js';

/** How long, and up to how many bytes, the SDK keeps actions the service acknowledged. */
export interface KeepAcknowledgedOptions {
  /** Default 72 hours. */
  forMs?: number;
  /** Actions and their photos and signatures together; the oldest go first. Default 64 MiB. */
  maxBytes?: number;
}

export const DEFAULT_KEEP_ACKNOWLEDGED: Required<KeepAcknowledgedOptions> = { forMs: 72 * 3600 * 1000, maxBytes: 64 * 2 ** 20 };

/** An acknowledged action as kept: enough to queue it again under its own id, in its own place. */
export interface KeptAction {
  id: string;
  seq: number;
  orderKey: string;
  createdAt: number;
  action: OutboxAction;
  /** When the service first acknowledged it; the window counts from here. */
  at: number;
  /** The record and its attachments. */
  bytes: number;
}

const PREFIX = 'acknowledged/';
const keyOf = (kept: Pick<KeptAction, 'seq' | 'id'>) => `${PREFIX}${String(kept.seq).padStart(12, '0')}-${kept.id}`;

const isKept = (value: unknown) => {
  const v = value as Partial<KeptAction> | null;
  return typeof v === 'object' && v !== null && typeof v.id === 'string' && typeof v.seq === 'number' && typeof v.at === 'number';
};

/** The photos and signatures an action needs to be sent again (a photo also once it was uploaded). */
export function heldAttachments(action: OutboxAction): string[] {
  if (action.kind === 'completion') return [action.customerSignature, action.driverSignature];
  if (action.kind === 'noteImage') return [action.image];
  return [];
}

/** As it was queued: a photo note without the upload's answer, so that sending it again uploads it again. */
function asQueued(action: OutboxAction): OutboxAction {
  if (action.kind !== 'noteImage' || !action.uploaded) return action;
  const { uploaded: _uploaded, ...queued } = action;
  return queued;
}

async function sizeOf(attachments: AttachmentStore, id: string): Promise<number> {
  const data = await attachments.get(id).catch(() => undefined);
  if (data === undefined || 'uri' in data) return 0; // a file the platform holds: its size is not ours to read
  return data instanceof Uint8Array ? data.byteLength : data.size;
}

/**
 * Acknowledged actions, kept for a window after the service took them: a service restored from
 * a backup older than the acknowledgement no longer holds them, and says so by refusing the
 * phone's cursor as ahead of its change log (or from another database). The client then queues
 * them again under their own ids before it resyncs; the service applies only the ones it lacks.
 * Kept under their own keys, written in the same batch as the acknowledgement itself.
 */
export class AcknowledgedActions {
  /** What is kept, oldest acknowledgement first: only what pruning needs, the actions stay in storage. */
  private readonly kept = new Map<string, Pick<KeptAction, 'id' | 'seq' | 'at' | 'bytes'> & { attachments: string[] }>();
  private total = 0;
  private readonly limits: Required<KeepAcknowledgedOptions> | undefined;
  /** Whether the outbox holds this id unanswered; set once the outbox is there. */
  pending: (id: string) => boolean = () => false;

  private constructor(
    private readonly store: JsonStore,
    private readonly attachments: AttachmentStore,
    options: KeepAcknowledgedOptions | null | undefined,
    private readonly now: () => number,
  ) {
    this.limits = options === null ? undefined : { ...DEFAULT_KEEP_ACKNOWLEDGED, ...options };
  }

  static async load(
    store: JsonStore,
    attachments: AttachmentStore,
    options: KeepAcknowledgedOptions | null | undefined,
    now: () => number,
  ) {
    const log = new AcknowledgedActions(store, attachments, options, now);
    const loaded = (await store.entries<KeptAction>(PREFIX, isKept)).map(([, kept]) => kept).sort((a, b) => a.at - b.at);
    for (const kept of loaded) log.remember(kept);
    return log;
  }

  /** Whether the window is open: acknowledged actions stay, and their photos and signatures with them. */
  get active(): boolean {
    return this.limits !== undefined;
  }

  /** The highest outbox seq kept: a new outbox entry must come after it, or a resend would overtake it. */
  get highestSeq(): number {
    let highest = 0;
    for (const kept of this.kept.values()) highest = Math.max(highest, kept.seq);
    return highest;
  }

  /** The writes that keep newly acknowledged entries; they go into the batch that records the acknowledgement. */
  writesFor(entries: OutboxEntry[]): [string, KeptAction][] {
    if (!this.limits) return [];
    return entries.map((entry) => {
      const known = this.kept.get(entry.id);
      const action = asQueued(entry.action);
      const record = {
        id: entry.id,
        seq: entry.seq,
        orderKey: entry.orderKey,
        createdAt: entry.createdAt,
        action,
        at: known?.at ?? this.now(),
        bytes: 0,
      };
      record.bytes = known?.bytes ?? JSON.stringify(record).length;
      return [keyOf(record), record];
    });
  }

  /** After the batch: counts the attachments of what was kept, then lets go of what is out of the window. */
  async afterWrite(written: [string, KeptAction][]) {
    for (const [key, record] of written) {
      const attachments = heldAttachments(record.action);
      if (attachments.length && !this.kept.has(record.id)) {
        for (const id of attachments) record.bytes += await sizeOf(this.attachments, id);
        await this.store.set(key, record);
      }
      this.remember(record);
    }
    await this.prune();
  }

  /** Everything kept within the window (also by other tabs on the same storage), in outbox order: what to send again after a restore. */
  async all(): Promise<KeptAction[]> {
    if (!this.limits) return [];
    const oldest = this.now() - this.limits.forMs;
    const stored = await this.store.entries<KeptAction>(PREFIX, isKept);
    return stored.map(([, kept]) => kept).filter((kept) => kept.at >= oldest);
  }

  /** Lets go of what is older than the window, then of the oldest until the rest fits the bytes. */
  async prune() {
    const gone: { id: string; seq: number; attachments: string[] }[] = [];
    const limits = this.limits;
    const oldest = this.now() - (limits?.forMs ?? 0);
    for (const kept of this.kept.values()) {
      if (limits && kept.at >= oldest && this.total <= limits.maxBytes) break;
      gone.push(kept);
      this.forget(kept.id);
    }
    if (!gone.length) return;
    await this.store.batch(gone.map((kept) => [keyOf(kept), undefined]));
    // An action queued again (and not yet answered) still needs its photos.
    const needed = gone.filter((kept) => this.pending(kept.id)).flatMap((kept) => kept.attachments);
    for (const id of gone.flatMap((kept) => kept.attachments)) {
      if (!needed.includes(id)) await this.attachments.delete(id).catch(() => undefined);
    }
  }

  /** A record acknowledged again (sent again after a restore) keeps its place and its time. */
  private remember(kept: KeptAction) {
    const known = this.kept.get(kept.id);
    this.total += kept.bytes - (known?.bytes ?? 0);
    const summary = { id: kept.id, seq: kept.seq, at: kept.at, bytes: kept.bytes, attachments: heldAttachments(kept.action) };
    if (known) Object.assign(known, summary);
    else this.kept.set(kept.id, summary);
  }

  private forget(id: string) {
    const known = this.kept.get(id);
    if (!known) return;
    this.total -= known.bytes;
    this.kept.delete(id);
  }
}
