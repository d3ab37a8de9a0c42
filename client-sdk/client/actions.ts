import type { AuditAction, CompleteDeliveryAcknowledgements } from '../../shared/schemas/deliveries.js';
import type { SyncEvent } from '../../shared/schemas/sync.js';
import { noteText } from '../../shared/rules/notes.js';
import { heldAttachments } from '../acknowledged.js';
import type { Binary } from '../api.js';
import { orderKeyOf, type CompletionAction, type NoteImageAction, type OutboxAction, type OutboxEntry } from '../outbox.js';
import type { ClientCore, EventInput } from './core.js';
import { Verdicts } from './localVerdicts.js';
import type { Outcome } from './outcomes.js';
import type { Reads } from './reads.js';

type ItemOptions = { authorCarId?: string | null };
/** What a retry of a refused action changes: fields of an event, a completion's acknowledgements, a photo note's text. */
export type RetryChanges =
  Partial<EventInput> | { acknowledgements?: Partial<CompletionAction['acknowledgements']> } | { text?: string | null };
/** An action stored durably; `outcome` settles when the service applied or refused it. */
export interface Queued {
  eventId: string;
  outcome: Promise<Outcome>;
}

/** The driver's actions: each resolves once it is durable in the outbox. */
export class Actions {
  private addChain: Promise<unknown> = Promise.resolve();
  /** Each action is checked once the calls before it are in the outbox, on the view they make. */
  readonly verdicts: Verdicts;

  constructor(
    private readonly core: ClientCore,
    private readonly reads: Reads,
    private readonly queued: () => void,
  ) {
    this.verdicts = new Verdicts(core, reads);
  }

  scan(deliveryItemId: string, options: ItemOptions = {}) {
    return this.itemAction(deliveryItemId, 'scan', options);
  }
  unscan(deliveryItemId: string, options: ItemOptions = {}) {
    return this.itemAction(deliveryItemId, 'unscan', options);
  }
  /** Without `quantity` the whole line is removed; with it, that many pieces are credited. */
  removeItem(deliveryItemId: string, options: { quantity?: number; reason?: string } & ItemOptions = {}) {
    return this.itemAction(deliveryItemId, 'remove', options);
  }
  unremoveItem(deliveryItemId: string, options: ItemOptions = {}) {
    return this.itemAction(deliveryItemId, 'unremove', options);
  }
  holdItem(deliveryItemId: string, options: { reason?: string } & ItemOptions = {}) {
    return this.itemAction(deliveryItemId, 'hold', options);
  }
  unholdItem(deliveryItemId: string, options: ItemOptions = {}) {
    return this.itemAction(deliveryItemId, 'unhold', options);
  }

  holdDelivery(deliveryId: string, reason: string) {
    return this.enqueue({ type: 'delivery.hold', deliveryId, reason });
  }
  resumeDelivery(deliveryId: string) {
    return this.enqueue({ type: 'delivery.resume', deliveryId });
  }
  cancelDelivery(deliveryId: string, reason: string) {
    return this.enqueue({ type: 'delivery.cancel', deliveryId, reason });
  }
  assignCar(deliveryId: string, carId: string | null) {
    return this.enqueue({ type: 'delivery.assignCar', deliveryId, carId });
  }

  setCredit(deliveryId: string, credit: { amountCents: number; reason: string } & ItemOptions) {
    return this.enqueue({ type: 'credit', deliveryId, action: 'set', ...credit });
  }
  removeCredit(deliveryId: string, options: ItemOptions = {}) {
    return this.enqueue({ type: 'credit', deliveryId, action: 'remove', ...options });
  }

  /**
   * `expectedAmountCents` defaults to the open amount the driver sees in the view, read once the
   * calls before this one are in the outbox (a credit just given lowers it).
   */
  recordPayment(deliveryId: string, payment: { paymentMethodId: string; expectedAmountCents?: number } & ItemOptions) {
    return this.queueEvent(() => {
      const expectedAmountCents = payment.expectedAmountCents ?? this.reads.delivery(deliveryId)?.openAmountCents;
      if (expectedAmountCents === undefined) throw new Error(`delivery ${deliveryId} is not in the local copy; pass expectedAmountCents`);
      return { type: 'payment', deliveryId, ...payment, expectedAmountCents };
    });
  }

  async createNote(
    deliveryId: string,
    note: {
      text?: string | null;
      imageAttachment?: string | null;
      creditDeliveryItemId?: string | null;
      isAmountCreditNote?: boolean;
    } & ItemOptions,
  ) {
    const noteId = this.core.randomId();
    const queued = await this.enqueue({ type: 'note.create', deliveryId, noteId, ...note });
    return { ...queued, noteId };
  }

  /** A note with a photo: the image goes to the attachment store, is uploaded once, then the note is completed. */
  async createImageNote(deliveryId: string, note: { image: Binary; contentType?: string; text?: string | null } & ItemOptions) {
    const { core } = this;
    const id = core.randomId();
    const noteId = core.randomId();
    const occurredAt = core.isoNow();
    const followUpEventId = core.randomId();
    const { outcome } = await this.add(id, async (): Promise<NoteImageAction> => ({
      kind: 'noteImage',
      deliveryId,
      noteId,
      occurredAt,
      image: await this.attach(id, note.image, note.contentType ?? 'image/jpeg'),
      contentType: note.contentType ?? 'image/jpeg',
      text: noteText(note.text),
      authorCarId: note.authorCarId ?? null,
      followUpEventId,
    }));
    return { eventId: id, noteId, outcome };
  }

  updateNote(deliveryId: string, noteId: string, patch: { text?: string | null; imageAttachment?: string | null }) {
    return this.enqueue({ type: 'note.update', deliveryId, noteId, ...patch });
  }
  deleteNote(deliveryId: string, noteId: string) {
    return this.enqueue({ type: 'note.delete', deliveryId, noteId });
  }

  setServiceValue(deliveryId: string, serviceId: string, value: { boolValue?: boolean | null; numericValue?: number | null }) {
    return this.enqueue({ type: 'service.set', deliveryId, serviceId, ...value });
  }
  clearServiceValue(deliveryId: string, serviceId: string) {
    return this.enqueue({ type: 'service.clear', deliveryId, serviceId });
  }

  /** Completion with both signatures (PNG); replayed safely through `acknowledgements.clientEventId`. */
  async complete(
    deliveryId: string,
    input: {
      customerSignature: Binary;
      driverSignature: Binary;
      acknowledgements: Omit<CompleteDeliveryAcknowledgements, 'clientEventId' | 'occurredAt'>;
    },
  ) {
    const id = this.core.randomId();
    const occurredAt = this.core.isoNow();
    const { outcome } = await this.add(id, async (): Promise<CompletionAction> => {
      this.verdicts.refuse({ type: 'delivery.complete', deliveryId, ...input });
      const customerSignature = await this.attach(`${id}.customer`, input.customerSignature, 'image/png');
      const driverSignature = await this.attach(`${id}.driver`, input.driverSignature, 'image/png');
      return {
        kind: 'completion',
        deliveryId,
        occurredAt,
        acknowledgements: { ...input.acknowledgements, clientEventId: id },
        customerSignature,
        driverSignature,
      };
    });
    return { eventId: id, outcome };
  }

  /** Any event of the sync protocol, for actions without a helper. */
  enqueue(input: EventInput): Promise<Queued> {
    return this.queueEvent(() => input);
  }

  /**
   * A refused action queued again with `changes`, as a new action: the service keeps its verdict
   * on the old event id. Its photos and signatures are reused; the refused entry goes.
   */
  async retry(entry: OutboxEntry, changes: RetryChanges): Promise<Queued> {
    const action = entry.action;
    let queued: Queued;
    if (action.kind === 'event') {
      const { eventId: _id, occurredAt: _at, ...event } = action.event;
      queued = await this.enqueue({ ...event, ...changes } as EventInput);
    } else {
      if (action.kind === 'noteImage' && action.uploaded)
        throw new Error('the photo is already with the service; change its note with updateNote');
      const id = this.core.randomId();
      const occurredAt = this.core.isoNow();
      const next: OutboxAction =
        action.kind === 'completion'
          ? {
              ...action,
              occurredAt,
              acknowledgements: {
                ...action.acknowledgements,
                ...(changes as { acknowledgements?: object }).acknowledgements,
                clientEventId: id,
              },
            }
          : {
              ...action,
              occurredAt,
              noteId: this.core.randomId(),
              followUpEventId: this.core.randomId(),
              ...('text' in changes ? { text: noteText(changes.text) } : {}),
            };
      const check = () => {
        if (next.kind === 'completion')
          this.verdicts.refuse({ type: 'delivery.complete', deliveryId: next.deliveryId, acknowledgements: next.acknowledgements });
        return next;
      };
      queued = { eventId: id, outcome: (await this.add(id, check)).outcome };
    }
    await this.core.outbox.remove(entry);
    this.core.emitStatus();
    return queued;
  }

  /** A refused action the driver has seen: it goes, and its photos and signatures with it. */
  async discard(entry: OutboxEntry) {
    await this.core.outbox.remove(entry);
    for (const id of heldAttachments(entry.action)) await this.core.attachments.delete(id).catch(() => undefined);
    this.core.emitChange(this.core.tourOfAction(entry.action));
    this.core.emitStatus();
  }

  /** Writes an attachment once, before its entry: the entry holds only the id. */
  private async attach(id: string, data: Binary, contentType: string) {
    await this.core.attachments.put(id, data, contentType);
    return id;
  }

  /** Waits until every call made so far is in the outbox. */
  idle() {
    return this.addChain;
  }

  private async queueEvent(build: () => EventInput): Promise<Queued> {
    const eventId = this.core.randomId();
    const occurredAt = this.core.isoNow();
    const { outcome } = await this.add(eventId, () => {
      const input = build();
      this.verdicts.refuse(input);
      return { kind: 'event', event: { ...input, eventId, occurredAt } as SyncEvent };
    });
    return { eventId, outcome };
  }

  private itemAction(deliveryItemId: string, action: AuditAction, options: { quantity?: number; reason?: string } & ItemOptions) {
    return this.enqueue({ type: 'scan', deliveryItemId, action, ...options });
  }

  /**
   * Entries join the outbox in the order of the calls, also when the app does not await one
   * call before the next, and when an action's bytes (a photo, signatures) take a moment to read:
   * each action is built once the ones before it are in.
   */
  private add(id: string, build: () => OutboxAction | Promise<OutboxAction>): Promise<{ outcome: Promise<Outcome> }> {
    const { core } = this;
    // Taken before anything is sent, so that no answer can come before someone listens.
    const outcome = core.outcomes.of(id);
    const added = this.addChain.then(async () => {
      const action = await Promise.resolve()
        .then(build)
        .catch((error: unknown) => {
          core.outcomes.forget(id);
          throw error;
        });
      await core.outbox.add(id, action, core.now(), this.orderKey(action));
      core.emitChange(core.tourOfAction(action));
      core.emitStatus();
      this.queued();
    });
    this.addChain = added.catch(() => undefined);
    // Wrapped: a promise returned from `then` would be waited for, not handed over.
    return added.then(() => ({ outcome }));
  }

  /** Scans are ordered with the other events of their delivery, which the local copy knows. */
  private orderKey(action: OutboxAction): string {
    if (action.kind === 'event' && action.event.type === 'scan') {
      const itemId = action.event.deliveryItemId;
      for (const tour of this.core.state.tours.values()) {
        const delivery = tour.deliveries.find((d) => d.positions.some((p) => p.id === itemId));
        if (delivery) return `delivery:${delivery.id}`;
      }
    }
    return orderKeyOf(action);
  }
}
