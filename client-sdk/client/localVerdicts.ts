import {
  carInactiveRefusal,
  completionRefusal,
  creditRefusal,
  internalNoteRefusal,
  itemVerdict,
  missingSignatureRefusal,
  noteContentRefusal,
  noteLineRefusal,
  paymentRefusal,
  serviceValueRefusal,
  transitionRefusal,
  workRefusal,
  type FieldProblem,
  type SignaturePart,
} from '../../shared/rules/refusals.js';
import { scanRejectionCode } from '../../shared/rules/eventResults.js';
import { noteImageReference, noteText } from '../../shared/rules/notes.js';
import type { CompleteDeliveryAcknowledgements, DeliveryDetails } from '../../shared/schemas/deliveries.js';
import type { FileData } from '../multipart.js';
import type { MasterData } from '../state.js';
import type { ClientCore, EventInput } from './core.js';
import type { Reads } from './reads.js';

/**
 * A verdict as the service answers it: the error code (for a scan, as the service answers scans,
 * the scan rejection code: quantity_exceeded, item_removed, ...), the rule that refused it
 * (`reason`), the message and the fields that broke the rule.
 */
export interface Refusal {
  code: string;
  reason: string;
  message: string;
  errors?: FieldProblem[];
}

/**
 * An action as `check` takes it: an event as `enqueue` takes it, or a completion. A completion's
 * signatures are judged when given (null or empty is missing), so a UI can check before they are drawn.
 */
export type CheckedAction =
  | EventInput
  | {
      type: 'delivery.complete';
      deliveryId: string;
      acknowledgements: Omit<CompleteDeliveryAcknowledgements, 'clientEventId' | 'occurredAt'>;
      customerSignature?: FileData | null;
      driverSignature?: FileData | null;
    };

/** What the device knows: the optimistic view of its deliveries, and the master data. */
export interface Known {
  delivery(deliveryId: string): DeliveryDetails | undefined;
  deliveryOfLine(deliveryItemId: string): DeliveryDetails | undefined;
  deliveryOfNote(noteId: string): DeliveryDetails | undefined;
  master: MasterData;
}

/**
 * An action refused on the device, before it was queued, with what the service would answer:
 * its `code`, the rule (`reason`), the message and the fields (`errors`).
 */
export class RefusalError extends Error implements Refusal {
  readonly code: Refusal['code'];
  readonly reason: string;
  readonly errors: Refusal['errors'];

  constructor(refusal: Refusal) {
    super(refusal.message);
    // Keeps instanceof working where Error subclasses are compiled to ES5 functions.
    Object.setPrototypeOf(this, RefusalError.prototype);
    this.name = 'RefusalError';
    this.code = refusal.code;
    this.reason = refusal.reason;
    this.errors = refusal.errors;
  }
}

/**
 * The service's verdict on an action, from what the device knows, with the rules the service
 * runs (shared/rules/refusals.ts), in the service's order. Null when those rules accept it, and
 * when the device does not know what the action names (a line, a note, a service or a method
 * it has not loaded): then the service decides.
 */
export function localVerdict(action: CheckedAction, known: Known): Refusal | null {
  if (action.type === 'scan') {
    const d = known.deliveryOfLine(action.deliveryItemId);
    const line = d?.positions.find((p) => p.id === action.deliveryItemId);
    if (!d || !line) return null;
    const outcome = itemVerdict(line, action.action, action.quantity);
    const refusal = workRefusal(d.state) ?? (outcome.ok ? null : outcome.refusal);
    return refusal && { ...refusal, code: scanRejectionCode(refusal)! };
  }
  if (action.type === 'note.update' || action.type === 'note.delete') {
    const note = known.deliveryOfNote(action.noteId)?.notes.find((n) => n.id === action.noteId);
    if (!note || action.type === 'note.delete') return null;
    return noteContentRefusal({
      text: action.text !== undefined ? noteText(action.text) : note.text,
      imageAttachment: action.imageAttachment !== undefined ? noteImageReference(action.imageAttachment) : note.imageAttachment,
    });
  }
  if (action.type === 'delivery.complete') {
    const d = known.delivery(action.deliveryId);
    return (
      signatureRefusal(action, 'customerSignature', 'customer_signature') ??
      signatureRefusal(action, 'driverSignature', 'driver_signature') ??
      internalNoteRefusal(action.acknowledgements.internalNote) ??
      (d ? completionVerdict(d, action.acknowledgements, known.master) : null)
    );
  }
  const d = known.delivery(action.deliveryId);
  if (!d) return null;
  switch (action.type) {
    case 'delivery.hold':
      return transitionRefusal(d.state, 'hold', action.reason);
    case 'delivery.cancel':
      return transitionRefusal(d.state, 'cancel', action.reason);
    case 'delivery.resume':
      return transitionRefusal(d.state, 'resume', null);
    case 'delivery.assignCar':
      return action.carId && known.master.cars[action.carId]?.active === false ? carInactiveRefusal() : null;
    case 'credit':
      return workRefusal(d.state) ?? creditRefusal(action, d.credit !== null);
    case 'payment': {
      // A method the device has not loaded may be new: the service decides on it.
      const methodActive = known.master.paymentMethods[action.paymentMethodId]?.active ?? true;
      return (
        workRefusal(d.state) ??
        paymentRefusal({ methodActive, openAmountCents: d.openAmountCents, expectedAmountCents: action.expectedAmountCents })
      );
    }
    case 'note.create':
      if (action.creditDeliveryItemId && !d.positions.some((p) => p.id === action.creditDeliveryItemId))
        return noteContentRefusal(action) ?? noteLineRefusal();
      return noteContentRefusal(action);
    case 'service.set': {
      const service = known.master.services[action.serviceId];
      return service ? serviceValueRefusal(d.state, service, action) : null;
    }
    case 'service.clear':
      return known.master.services[action.serviceId] ? workRefusal(d.state) : null;
  }
}

type CompletionCheck = Extract<CheckedAction, { type: 'delivery.complete' }>;
type CompletionAcknowledgements = CompletionCheck['acknowledgements'];

/** Bytes known to be none; a React Native file (`{ uri }`) is read only when sent. */
const isEmpty = (data: FileData | null) =>
  data === null || (data instanceof Uint8Array ? data.byteLength === 0 : 'size' in data ? data.size === 0 : false);

function signatureRefusal(action: CompletionCheck, key: 'customerSignature' | 'driverSignature', part: SignaturePart) {
  return key in action && isEmpty(action[key] ?? null) ? missingSignatureRefusal(part) : null;
}

function completionVerdict(d: DeliveryDetails, ack: CompletionAcknowledgements, master: MasterData) {
  const chosen = ack.paymentMethodId ? master.paymentMethods[ack.paymentMethodId] : undefined;
  const method = chosen ?? (d.paymentMethodId ? master.paymentMethods[d.paymentMethodId] : undefined);
  // Unknown here is not invalid: the method may be newer than the device's master data.
  const chosenMethodInvalid = chosen?.active === false;
  return completionRefusal({
    state: d.state,
    positions: d.positions,
    noteCount: d.notes.length,
    acknowledgements: ack,
    openAmountCents: d.openAmountCents,
    latestPaymentCents: d.latestPayment?.amountCents ?? null,
    method: chosenMethodInvalid || (ack.paymentMethodId && !chosen) ? null : (method ?? null),
    chosenMethodInvalid,
  });
}

/** The client's local verdicts: `check` tells them, `refuse` throws them before an action is queued. */
export class Verdicts {
  constructor(
    private readonly core: ClientCore,
    private readonly reads: Reads,
  ) {}

  check(action: CheckedAction): Refusal | null {
    return localVerdict(action, this.known());
  }

  /** Throws the verdict as a RefusalError, unless the app leaves every verdict to the service (`checkLocally: false`). */
  refuse(action: CheckedAction) {
    if (this.core.options.checkLocally === false) return;
    const refusal = this.check(action);
    if (refusal) throw new RefusalError(refusal);
  }

  private known(): Known {
    const { core, reads } = this;
    const deliveries = () => core.tourIds().flatMap((id) => reads.view(id)?.deliveries ?? []);
    return {
      delivery: (id) => reads.delivery(id),
      // Lines come only from the service: the local copy knows them all.
      deliveryOfLine: (itemId) => {
        for (const tour of core.state.tours.values()) {
          const d = tour.deliveries.find((x) => x.positions.some((p) => p.id === itemId));
          if (d) return reads.delivery(d.id);
        }
        return undefined;
      },
      // A note may still wait in the outbox: it is in the view.
      deliveryOfNote: (noteId) => deliveries().find((d) => d.notes.some((n) => n.id === noteId)),
      master: core.state.master,
    };
  }
}
