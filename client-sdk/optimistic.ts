import { acceptsWork, nextDeliveryState, reasonProblem } from '../shared/rules/delivery.js';
import { applyItemAction } from '../shared/rules/items.js';
import { completionProblem } from '../shared/rules/completion.js';
import { creditProblems, paymentProblem } from '../shared/rules/money.js';
import { goesWithUnremove, noteHasContent, noteImageReference, noteText } from '../shared/rules/notes.js';
import { openAmountCents } from '../shared/rules/openAmount.js';
import { serviceValueProblem } from '../shared/rules/services.js';
import type { DeliveryDetails, Note } from '../shared/schemas/deliveries.js';
import type { SyncEvent } from '../shared/schemas/sync.js';
import type { OutboxEntry } from './outbox.js';
import type { MasterData } from './state.js';

/** A note whose image still waits in the outbox carries this prefix and the entry id as its image reference. */
export const LOCAL_IMAGE_PREFIX = 'local:';

/**
 * The optimistic view: applies the outbox entries to deliveries of the view (copies of the local
 * copy's) with the rules the service runs (shared/rules), so the driver sees an action at once.
 */
export function applyEntries(list: DeliveryDetails[], entries: readonly OutboxEntry[], master: MasterData) {
  const deliveries = new Map(list.map((d) => [d.id, d]));
  const items = new Map(list.flatMap((d) => d.positions.map((p) => [p.id, d] as const)));
  for (const entry of entries) {
    const action = entry.action;
    if (action.kind === 'event') {
      const event = action.event;
      const delivery =
        event.type === 'scan' ? items.get(event.deliveryItemId) : (deliveries.get(event.deliveryId ?? '') ?? findNoteDelivery(list, event));
      if (delivery) applyOptimistic(delivery, event, master);
    } else {
      const delivery = deliveries.get(action.deliveryId);
      if (!delivery) continue;
      if (action.kind === 'completion') {
        const ack = action.acknowledgements;
        const methodId = ack.paymentMethodId ?? delivery.paymentMethodId;
        const method = methodId ? master.paymentMethods[methodId] : undefined;
        const problem = completionProblem({
          state: delivery.state,
          positions: delivery.positions,
          noteCount: delivery.notes.length,
          acknowledgements: ack,
          openAmountCents: delivery.openAmountCents,
          latestPaymentCents: delivery.latestPayment?.amountCents ?? null,
          method: method ?? null,
        });
        if (!problem) Object.assign(delivery, { state: 'completed', completedAt: action.occurredAt });
      } else {
        const noteId = action.uploaded?.noteId ?? action.noteId;
        if (!delivery.notes.some((n) => n.id === noteId)) {
          delivery.notes.push({
            id: noteId,
            deliveryId: delivery.id,
            text: action.text,
            imageAttachmentId: null,
            imageAttachment: action.uploaded?.imageAttachment ?? `${LOCAL_IMAGE_PREFIX}${entry.id}`,
            authorCarId: action.authorCarId,
            creditDeliveryItemId: null,
            isAmountCreditNote: false,
            createdAt: action.occurredAt,
            updatedAt: action.occurredAt,
          });
        }
      }
    }
  }
}

function findNoteDelivery(deliveries: DeliveryDetails[], event: SyncEvent): DeliveryDetails | undefined {
  if (event.type !== 'note.update' && event.type !== 'note.delete') return undefined;
  return deliveries.find((d) => d.notes.some((n) => n.id === event.noteId));
}

const recomputeOpenAmount = (d: DeliveryDetails) => {
  d.openAmountCents = openAmountCents({
    erpOpenAmountCents: d.erpOpenAmountCents,
    creditAmountCents: d.credit?.amountCents ?? null,
    positions: d.positions,
  });
};

/**
 * One pending event on a delivery of the local copy, with the same rules the server runs.
 * An event the rules refuse leaves the view unchanged: the server will most likely refuse it too.
 */
export function applyOptimistic(d: DeliveryDetails, event: SyncEvent, master: MasterData): void {
  switch (event.type) {
    case 'scan': {
      const index = d.positions.findIndex((p) => p.id === event.deliveryItemId);
      if (index < 0 || d.state !== 'active') return;
      const outcome = applyItemAction(d.positions[index], event.action, event.quantity);
      if (!outcome.ok) return;
      const { state, scannedQuantity, creditedQuantity } = outcome.item;
      d.positions[index] = { ...d.positions[index], state, scannedQuantity, creditedQuantity };
      if (event.action === 'unremove') d.notes = d.notes.filter((n) => !goesWithUnremove(n, event.deliveryItemId));
      recomputeOpenAmount(d);
      return;
    }
    case 'delivery.hold':
    case 'delivery.resume':
    case 'delivery.cancel': {
      const operation = event.type.slice('delivery.'.length) as 'hold' | 'resume' | 'cancel';
      const next = nextDeliveryState(d.state, operation);
      if (!next || (event.type !== 'delivery.resume' && reasonProblem(event.reason))) return;
      d.state = next;
      d.stateReason = event.type === 'delivery.resume' ? null : event.reason.trim();
      return;
    }
    case 'delivery.assignCar': {
      const car = event.carId ? master.cars[event.carId] : undefined;
      if (event.carId && car && !car.active) return;
      d.assignedCarId = event.carId;
      return;
    }
    case 'credit': {
      if (!acceptsWork(d.state)) return;
      if (event.action === 'set') {
        if (creditProblems(event.amountCents, event.reason).length) return;
        d.credit = { amountCents: event.amountCents!, reason: event.reason!.trim(), updatedAt: event.occurredAt };
      } else {
        if (!d.credit) return;
        d.credit = null;
      }
      recomputeOpenAmount(d);
      return;
    }
    case 'payment': {
      if (!acceptsWork(d.state)) return;
      const method = master.paymentMethods[event.paymentMethodId];
      // Without the method locally the server decides; the view assumes it is active.
      const problem = paymentProblem({
        methodActive: method?.active ?? true,
        openAmountCents: d.openAmountCents,
        expectedAmountCents: event.expectedAmountCents,
      });
      if (problem) return;
      d.latestPayment = {
        id: event.eventId,
        deliveryId: d.id,
        paymentMethodId: event.paymentMethodId,
        paymentMethodCode: method?.code ?? '',
        amountCents: d.openAmountCents,
        accountId: d.latestPayment?.accountId ?? 0,
        authorCarId: event.authorCarId ?? null,
        occurredAt: event.occurredAt,
        receivedAt: event.occurredAt,
      };
      return;
    }
    case 'note.create': {
      if (!noteHasContent(event) || d.notes.some((n) => n.id === event.noteId)) return;
      d.notes.push({
        id: event.noteId,
        deliveryId: d.id,
        text: noteText(event.text),
        imageAttachment: noteImageReference(event.imageAttachment),
        imageAttachmentId: null,
        authorCarId: event.authorCarId ?? null,
        creditDeliveryItemId: event.creditDeliveryItemId ?? null,
        isAmountCreditNote: event.isAmountCreditNote ?? false,
        createdAt: event.occurredAt,
        updatedAt: event.occurredAt,
      });
      return;
    }
    case 'note.update': {
      const index = d.notes.findIndex((n) => n.id === event.noteId);
      if (index < 0) return;
      const next: Note = {
        ...d.notes[index],
        ...(event.text !== undefined ? { text: noteText(event.text) } : {}),
        ...(event.imageAttachment !== undefined ? { imageAttachment: noteImageReference(event.imageAttachment) } : {}),
        updatedAt: event.occurredAt,
      };
      if (noteHasContent(next)) d.notes[index] = next;
      return;
    }
    case 'note.delete':
      d.notes = d.notes.filter((n) => n.id !== event.noteId);
      return;
    case 'service.set': {
      if (!acceptsWork(d.state)) return;
      const service = master.services[event.serviceId];
      if (service && (!service.active || serviceValueProblem(service, event))) return;
      const value = {
        deliveryId: d.id,
        serviceId: event.serviceId,
        boolValue: event.boolValue ?? null,
        numericValue: event.numericValue ?? null,
        updatedAt: event.occurredAt,
      };
      const index = d.serviceValues.findIndex((v) => v.serviceId === event.serviceId);
      if (index >= 0) d.serviceValues[index] = value;
      else d.serviceValues.push(value);
      return;
    }
    case 'service.clear':
      if (!acceptsWork(d.state)) return;
      d.serviceValues = d.serviceValues.filter((v) => v.serviceId !== event.serviceId);
      return;
  }
}
