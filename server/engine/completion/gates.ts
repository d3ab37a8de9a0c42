import { and, asc, desc, eq } from 'drizzle-orm';
import { paymentSettlement, type PaymentSettlement } from '../../../shared/rules/completion.js';
import { internalNote as keptNote } from '../../../shared/rules/notes.js';
import { completionRefusal, internalNoteRefusal } from '../../../shared/rules/refusals.js';
import type { CompleteDeliveryAcknowledgements, Delivery } from '../../../shared/schemas/deliveries.js';
import type { DriverActor } from '../../context.js';
import type { Db } from '../../db/client.js';
import {
  articles,
  cars,
  deliveries,
  deliveryItems,
  notes,
  paymentMethods,
  paymentProtocol,
  processedEvents,
  tours,
} from '../../db/schema.js';
import { DomainError, notFound, validation } from '../../errors.js';
import { toDelivery, type DeliveryRow, type ItemRow } from '../../shapes/rows.js';

export const COMPLETE_EVENT_TYPE = 'delivery.complete';

export interface PaymentOutcome {
  paymentMethodId: string | null;
  paymentId: string | null;
  paymentCollected: boolean;
  collectedAmountCents: number;
}

/** A refusal of the request, as every REST mutation's (400): the id stands for another event or delivery. */
export const reusedClientEventId = () =>
  validation('This clientEventId was already used for another event', [
    { path: 'acknowledgements.clientEventId', message: 'already used for another event' },
  ]);

export type Evaluation =
  | { kind: 'replay'; delivery: Delivery }
  | {
      kind: 'ready';
      delivery: DeliveryRow;
      items: ItemRow[];
      payment: PaymentOutcome;
      internalNote: string | null;
      acknowledgedNoteIds: string[];
    };

/** The internal note as kept; longer than the limit is refused. */
function keptInternalNote(value: string | null | undefined): string | null {
  const refused = internalNoteRefusal(value);
  if (refused) throw new DomainError(refused.code, refused.message, refused.errors);
  return keptNote(value)!;
}

/** A delivery of one of the account's tours, locked; undefined when unknown or foreign. */
async function lockOwnDelivery(tx: Db, accountId: number, deliveryId: string) {
  const [found] = await tx
    .select({ delivery: deliveries })
    .from(deliveries)
    .innerJoin(tours, eq(tours.id, deliveries.tourId))
    .where(and(eq(deliveries.id, deliveryId), eq(tours.accountId, accountId)))
    .for('update', { of: deliveries });
  return found?.delivery;
}

export /** The gates of the spec, in its order, under the delivery's row lock. */
async function evaluate(tx: Db, actor: DriverActor, deliveryId: string, ack: CompleteDeliveryAcknowledgements): Promise<Evaluation> {
  const internalNote = keptInternalNote(ack.internalNote);
  const delivery = await lockOwnDelivery(tx, actor.personalnummer, deliveryId);
  if (!delivery) throw notFound('Delivery');
  const itemRows = await tx
    .select({ item: deliveryItems, scannable: articles.scannable })
    .from(deliveryItems)
    .innerJoin(articles, eq(articles.id, deliveryItems.articleId))
    .where(eq(deliveryItems.deliveryId, deliveryId))
    .orderBy(asc(deliveryItems.lineNumber));
  const items = itemRows.map((r) => r.item);

  if (ack.clientEventId) {
    const [seen] = await tx.select().from(processedEvents).where(eq(processedEvents.eventId, ack.clientEventId));
    if (seen) {
      if (seen.type === COMPLETE_EVENT_TYPE && seen.deliveryId === deliveryId)
        return { kind: 'replay', delivery: toDelivery(delivery, items) };
      throw reusedClientEventId();
    }
  }

  const noteIds = new Set((await tx.select({ id: notes.id }).from(notes).where(eq(notes.deliveryId, deliveryId))).map((n) => n.id));
  const chosen = await effectiveMethod(tx, delivery, ack);
  const method = chosen === 'invalid' ? undefined : chosen;
  const [latest] = await tx
    .select()
    .from(paymentProtocol)
    .where(eq(paymentProtocol.deliveryId, delivery.id))
    .orderBy(desc(paymentProtocol.receivedAt), desc(paymentProtocol.occurredAt))
    .limit(1);
  const gate = {
    state: delivery.state,
    positions: itemRows.map((r) => ({ ...r.item, scannable: r.scannable })),
    noteCount: noteIds.size,
    acknowledgements: ack,
    openAmountCents: toDelivery(delivery, items).openAmountCents,
    latestPaymentCents: latest?.amountCents ?? null,
    method: method ?? null,
  };
  const problem = completionRefusal({ ...gate, chosenMethodInvalid: chosen === 'invalid' });
  if (problem) throw new DomainError(problem.code, problem.message, problem.errors);
  const payment = paymentOutcome(paymentSettlement(gate), gate.openAmountCents, method, latest, ack);

  if (ack.authorCarId) {
    const [car] = await tx
      .select({ id: cars.id })
      .from(cars)
      .where(and(eq(cars.id, ack.authorCarId), eq(cars.accountId, actor.personalnummer)));
    if (!car)
      throw validation('The car does not belong to the account', [
        { path: 'acknowledgements.authorCarId', message: 'not a car of the account' },
      ]);
  }
  // Only the delivery's notes as they are now: an id the phone still showed may have been deleted meanwhile.
  const acknowledgedNoteIds = [...new Set(ack.acknowledgedNoteIds ?? [])].filter((id) => noteIds.has(id));
  return { kind: 'ready', delivery, items, payment, internalNote, acknowledgedNoteIds };
}

/** The method chosen at completion ('invalid' when unknown or inactive), else the one stored on the delivery. */
async function effectiveMethod(tx: Db, delivery: DeliveryRow, ack: CompleteDeliveryAcknowledgements) {
  if (ack.paymentMethodId) {
    const [method] = await tx.select().from(paymentMethods).where(eq(paymentMethods.id, ack.paymentMethodId));
    return method?.active ? method : ('invalid' as const);
  }
  if (!delivery.paymentMethodId) return undefined;
  const [method] = await tx.select().from(paymentMethods).where(eq(paymentMethods.id, delivery.paymentMethodId));
  return method;
}

/** What the completion records about the money; the amount always comes from the server. */
function paymentOutcome(
  settlement: PaymentSettlement,
  open: number,
  method: typeof paymentMethods.$inferSelect | undefined,
  latest: typeof paymentProtocol.$inferSelect | undefined,
  ack: CompleteDeliveryAcknowledgements,
): PaymentOutcome {
  const methodId = method?.id ?? null;
  switch (settlement) {
    case 'logged_payment':
      return {
        paymentMethodId: latest!.paymentMethodId,
        paymentId: latest!.id,
        paymentCollected: true,
        collectedAmountCents: latest!.amountCents,
      };
    case 'collected_on_site':
      return { paymentMethodId: methodId, paymentId: null, paymentCollected: true, collectedAmountCents: open };
    case 'none_open':
      return { paymentMethodId: methodId, paymentId: null, paymentCollected: ack.paymentCollected === true, collectedAmountCents: 0 };
    case 'not_collected_on_site':
      return { paymentMethodId: methodId, paymentId: null, paymentCollected: false, collectedAmountCents: 0 };
  }
}
