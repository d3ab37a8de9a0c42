import { newId } from '../../shared/ids.js';
import { nextDeliveryState, type DeliveryOperation } from '../../shared/rules/delivery.js';
import { goesWithUnremove, noteImageReference, noteText } from '../../shared/rules/notes.js';
// The verdicts the SDK also gives offline; they are the rules, so they read as such here.
import * as rules from '../../shared/rules/refusals.js';
import { openAmountCents } from '../../shared/rules/openAmount.js';
import type { ErrorCode } from '../../shared/schemas/common.js';
import type { EventEntity, SyncEvent, SyncEventOf } from '../../shared/schemas/sync.js';
import type { cars, paymentMethods, services, RecordedRejection } from '../db/schema.js';
import type { FieldProblem } from '../errors.js';
import { toCredit, toItem, toPayment, toServiceValue, type DeliveryRow, type PaymentRow } from '../shapes/rows.js';
import type { WorkingSet } from './workingSet.js';
import { currentDelivery, currentNote } from './workingSetShapes.js';

/** `errors` names the fields of the event (the same as the REST request's) that broke the rule. */
export interface Rejection extends RecordedRejection {
  code: ErrorCode;
}
export type Outcome = { ok: true; entity: EventEntity | null } | { ok: false; rejection: Rejection };

/** What an operation may look up besides its delivery; loaded once per batch. */
export interface Lookups {
  cars: Map<string, typeof cars.$inferSelect>;
  services: Map<string, typeof services.$inferSelect>;
  paymentMethods: Map<string, typeof paymentMethods.$inferSelect>;
}

export interface AttachmentInput {
  reference: string;
  contentType: string;
  sizeBytes: number;
}

export interface OperationInput {
  ws: WorkingSet;
  lookups: Lookups;
  occurredAt: Date;
  attachment?: AttachmentInput;
}

const rejected = (code: ErrorCode, reason: string, message: string, errors?: FieldProblem[]): Outcome => ({
  ok: false,
  rejection: { code, reason, message, ...(errors && { errors }) },
});
const invalid = (message: string, reason: string, errors?: FieldProblem[]) => rejected('validation', reason, message, errors);
const notOwnCar = (path: 'authorCarId' | 'carId') =>
  invalid('The car does not belong to your account', 'car_not_of_account', [{ path, message: 'is not a car of your account' }]);
/** A refusal of the rules the SDK runs too (shared/rules/refusals.ts). */
const refused = (rejection: rules.Refusal): Outcome => ({ ok: false, rejection });

function checkCar(lookups: Lookups, carId: string | null | undefined): Outcome | undefined {
  if (carId && !lookups.cars.has(carId)) return notOwnCar('authorCarId');
  return undefined;
}

const openAmount = (ws: WorkingSet) =>
  openAmountCents({
    erpOpenAmountCents: ws.delivery.erpOpenAmountCents,
    creditAmountCents: ws.delivery.creditAmountCents,
    positions: [...ws.items.values()].map((i) => i.row),
  });

/** The state of what the event touches, as its result (also for duplicates). */
export function entityOf(ws: WorkingSet, event: SyncEvent, payment?: PaymentRow): EventEntity | null {
  switch (event.type) {
    case 'scan': {
      const item = ws.items.get(event.deliveryItemId);
      return item ? toItem(item.row, item.scannable) : null;
    }
    case 'credit':
      return { credit: toCredit(ws.delivery), openAmountCents: openAmount(ws) };
    case 'payment':
      return payment ? { payment: toPayment(payment), openAmountCents: openAmount(ws) } : null;
    case 'note.create':
    case 'note.update':
    case 'note.delete': {
      const note = ws.notes?.get(event.noteId);
      return note && note.state !== 'deleted' ? currentNote(ws, note.row) : null;
    }
    case 'service.set':
    case 'service.clear': {
      const value = ws.serviceValues?.get(event.serviceId);
      return value && value.state !== 'deleted' ? toServiceValue(value.row) : null;
    }
    default:
      return currentDelivery(ws);
  }
}

function scan(input: OperationInput, event: SyncEventOf<'scan'>, eventId: string): Outcome {
  const { ws } = input;
  const item = ws.items.get(event.deliveryItemId);
  if (!item) return rejected('not_found', 'not_found', 'Delivery item not found');
  const work = rules.workRefusal(ws.delivery.state);
  if (work) return refused(work);
  const car = checkCar(input.lookups, event.authorCarId);
  if (car) return car;
  const outcome = rules.itemVerdict({ ...item.row, scannable: item.scannable }, event.action, event.quantity);
  if (!outcome.ok) return refused(outcome.refusal);
  const { state, scannedQuantity, creditedQuantity } = outcome.item;
  item.row = { ...item.row, state, scannedQuantity, creditedQuantity };
  item.dirty = true;
  ws.inserts.audit.push({
    clientScanId: eventId,
    deliveryId: ws.delivery.id,
    deliveryItemId: item.row.id,
    action: event.action,
    quantity: event.quantity ?? null,
    reason: event.reason?.trim() || null,
    scannedQuantityAfter: scannedQuantity,
    creditedQuantityAfter: creditedQuantity,
    stateAfter: state,
    accountId: ws.accountId,
    authorCarId: event.authorCarId ?? null,
    occurredAt: input.occurredAt,
  });
  if (event.action === 'unremove' && ws.notes) {
    // The credit note that gave the reason for this line goes with the credit.
    for (const note of ws.notes.values()) {
      if (note.state !== 'deleted' && goesWithUnremove(note.row, item.row.id)) note.state = 'deleted';
    }
  }
  return { ok: true, entity: toItem(item.row, item.scannable) };
}

/** Changes the delivery in memory, stamped with the time of the change: it is written so, and its answer shows it. */
function changeDelivery(ws: WorkingSet, changes: Partial<DeliveryRow>) {
  ws.delivery = { ...ws.delivery, ...changes, updatedAt: new Date() };
  ws.deliveryDirty = true;
}

function transition(input: OperationInput, operation: DeliveryOperation, reason: string | null): Outcome {
  const { ws } = input;
  const problem = rules.transitionRefusal(ws.delivery.state, operation, reason);
  if (problem) return refused(problem);
  changeDelivery(ws, { state: nextDeliveryState(ws.delivery.state, operation)!, stateReason: reason?.trim() ?? null });
  return { ok: true, entity: currentDelivery(ws) };
}

function credit(input: OperationInput, event: SyncEventOf<'credit'>, eventId: string): Outcome {
  const { ws } = input;
  const work = rules.workRefusal(ws.delivery.state);
  if (work) return refused(work);
  const car = checkCar(input.lookups, event.authorCarId);
  if (car) return car;
  const problem = rules.creditRefusal(event, ws.delivery.creditAmountCents !== null);
  if (problem) return refused(problem);
  if (event.action === 'set') {
    changeDelivery(ws, { creditAmountCents: event.amountCents!, creditReason: event.reason!.trim(), creditUpdatedAt: input.occurredAt });
  } else {
    changeDelivery(ws, { creditAmountCents: null, creditReason: null, creditUpdatedAt: input.occurredAt });
  }
  ws.inserts.credits.push({
    clientEventId: eventId,
    deliveryId: ws.delivery.id,
    action: event.action,
    amountCents: event.action === 'set' ? event.amountCents! : null,
    reason: event.action === 'set' ? event.reason!.trim() : null,
    accountId: ws.accountId,
    authorCarId: event.authorCarId ?? null,
    occurredAt: input.occurredAt,
  });
  return { ok: true, entity: { credit: toCredit(ws.delivery), openAmountCents: openAmount(ws) } };
}

function payment(input: OperationInput, event: SyncEventOf<'payment'>, eventId: string): Outcome {
  const { ws } = input;
  const work = rules.workRefusal(ws.delivery.state);
  if (work) return refused(work);
  const car = checkCar(input.lookups, event.authorCarId);
  if (car) return car;
  const method = input.lookups.paymentMethods.get(event.paymentMethodId);
  const open = openAmount(ws);
  const problem = rules.paymentRefusal({
    methodActive: method?.active ?? false,
    openAmountCents: open,
    expectedAmountCents: event.expectedAmountCents,
  });
  if (problem) return refused(problem);
  const row: PaymentRow = {
    id: newId(),
    clientEventId: eventId,
    deliveryId: ws.delivery.id,
    paymentMethodId: method!.id,
    paymentMethodCode: method!.code,
    amountCents: open,
    accountId: ws.accountId,
    authorCarId: event.authorCarId ?? null,
    occurredAt: input.occurredAt,
    receivedAt: new Date(),
  };
  ws.inserts.payments.push(row);
  return { ok: true, entity: { payment: toPayment(row), openAmountCents: open } };
}

function noteCreate(input: OperationInput, event: SyncEventOf<'note.create'>): Outcome {
  const { ws } = input;
  const content = rules.noteContentRefusal(event);
  if (content) return refused(content);
  const car = checkCar(input.lookups, event.authorCarId);
  if (car) return car;
  if (event.creditDeliveryItemId && !ws.items.has(event.creditDeliveryItemId)) return refused(rules.noteLineRefusal());
  if (ws.notes!.has(event.noteId)) return rejected('conflict', 'conflict', 'A note with this id exists');
  const now = new Date();
  const row = {
    id: event.noteId,
    deliveryId: ws.delivery.id,
    text: noteText(event.text),
    imageAttachment: noteImageReference(event.imageAttachment),
    authorCarId: event.authorCarId ?? null,
    creditDeliveryItemId: event.creditDeliveryItemId ?? null,
    isAmountCreditNote: event.isAmountCreditNote ?? false,
    createdAt: now,
    updatedAt: now,
  };
  ws.notes!.set(row.id, { row, state: 'new' });
  if (input.attachment) {
    const image = {
      id: newId(),
      deliveryId: ws.delivery.id,
      noteId: row.id,
      kind: 'note_image' as const,
      ...input.attachment,
      sha256: null,
      createdAt: now,
    };
    ws.inserts.attachments.push(image);
    ws.noteImages.set(row.id, image);
  }
  return { ok: true, entity: currentNote(ws, row) };
}

function noteUpdate(input: OperationInput, event: SyncEventOf<'note.update'>): Outcome {
  const note = input.ws.notes!.get(event.noteId);
  if (!note || note.state === 'deleted') return rejected('not_found', 'not_found', 'Note not found');
  const next = {
    ...note.row,
    ...(event.text !== undefined ? { text: noteText(event.text) } : {}),
    ...(event.imageAttachment !== undefined ? { imageAttachment: noteImageReference(event.imageAttachment) } : {}),
    updatedAt: new Date(),
  };
  const content = rules.noteContentRefusal(next);
  if (content) return refused(content);
  note.row = next;
  if (note.state === 'clean') note.state = 'dirty';
  if (input.ws.noteImages.get(next.id)?.reference !== next.imageAttachment) releaseImage(input.ws, next.id);
  return { ok: true, entity: currentNote(input.ws, next) };
}

/** The note's uploaded image, if any, is no longer shown by it. */
function releaseImage(ws: WorkingSet, noteId: string) {
  const image = ws.noteImages.get(noteId);
  if (!image) return;
  ws.noteImages.delete(noteId);
  // One uploaded in this batch is written without its note; a stored one is let go by the flush.
  if (ws.inserts.attachments.includes(image)) image.noteId = null;
  else ws.releasedImages.push(image);
}

function noteDelete(input: OperationInput, event: SyncEventOf<'note.delete'>): Outcome {
  const note = input.ws.notes!.get(event.noteId);
  if (!note || note.state === 'deleted') return rejected('not_found', 'not_found', 'Note not found');
  note.state = 'deleted';
  releaseImage(input.ws, note.row.id);
  return { ok: true, entity: null };
}

function serviceSet(input: OperationInput, event: SyncEventOf<'service.set'>): Outcome {
  const { ws } = input;
  const service = input.lookups.services.get(event.serviceId);
  if (!service) return rejected('not_found', 'not_found', 'Service not found');
  const problem = rules.serviceValueRefusal(ws.delivery.state, service, event);
  if (problem) return refused(problem);
  const row = {
    deliveryId: ws.delivery.id,
    serviceId: service.id,
    boolValue: event.boolValue ?? null,
    numericValue: event.numericValue ?? null,
    authorCarId: null,
    updatedAt: new Date(),
  };
  ws.serviceValues!.set(service.id, { row, state: 'dirty' });
  return { ok: true, entity: toServiceValue(row) };
}

function serviceClear(input: OperationInput, event: SyncEventOf<'service.clear'>): Outcome {
  const { ws } = input;
  if (!input.lookups.services.has(event.serviceId)) return rejected('not_found', 'not_found', 'Service not found');
  const work = rules.workRefusal(ws.delivery.state);
  if (work) return refused(work);
  const value = ws.serviceValues!.get(event.serviceId);
  if (value && value.state !== 'deleted') value.state = 'deleted';
  return { ok: true, entity: null };
}

function assignCar(input: OperationInput, event: SyncEventOf<'delivery.assignCar'>): Outcome {
  const { ws } = input;
  if (event.carId) {
    const car = input.lookups.cars.get(event.carId);
    if (!car) return notOwnCar('carId');
    if (!car.active) return refused(rules.carInactiveRefusal());
  }
  changeDelivery(ws, { assignedCarId: event.carId });
  return { ok: true, entity: currentDelivery(ws) };
}

/** Applies one event to the working set in memory, or says why not; nothing is written here. */
export function applyOperation(input: OperationInput, event: SyncEvent): Outcome {
  switch (event.type) {
    case 'scan':
      return scan(input, event, event.eventId);
    case 'delivery.hold':
      return transition(input, 'hold', event.reason);
    case 'delivery.resume':
      return transition(input, 'resume', null);
    case 'delivery.cancel':
      return transition(input, 'cancel', event.reason);
    case 'delivery.assignCar':
      return assignCar(input, event);
    case 'credit':
      return credit(input, event, event.eventId);
    case 'payment':
      return payment(input, event, event.eventId);
    case 'note.create':
      return noteCreate(input, event);
    case 'note.update':
      return noteUpdate(input, event);
    case 'note.delete':
      return noteDelete(input, event);
    case 'service.set':
      return serviceSet(input, event);
    case 'service.clear':
      return serviceClear(input, event);
  }
}
