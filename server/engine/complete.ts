import { randomUUID } from 'node:crypto';
import { and, asc, desc, eq } from 'drizzle-orm';
import { completionProblem, completionTime, paymentSettlement, type PaymentSettlement } from '../../shared/rules/completion.js';
import type { CompleteDeliveryAcknowledgements, Delivery } from '../../shared/schemas/deliveries.js';
import type { DriverActor } from '../context.js';
import type { Db } from '../db/client.js';
import { constraintViolation } from '../db/errors.js';
import {
  articles, attachmentContents, attachments, cars, completions, deliveries, deliveryItems, notes, paymentMethods, paymentProtocol,
  processedEvents, tours,
} from '../db/schema.js';
import { DomainError, notFound, validation } from '../errors.js';
import { databaseReference } from '../queries/attachmentContents.js';
import { readReportSource } from '../queries/completionReport.js';
import { toAttachment, toDelivery, type AttachmentRow, type DeliveryRow, type ItemRow } from '../queries/shapes.js';
import { recordChanges, type ChangeRecord } from './changeLog.js';

export const INTERNAL_NOTE_MAX = 2000;
export const COMPLETE_EVENT_TYPE = 'delivery.complete';

/** A file already written to the document store. */
export interface StoredFile { reference: string; contentType: string; sizeBytes: number }

export interface CompletionRequest {
  deliveryId: string;
  acknowledgements: CompleteDeliveryAcknowledgements;
  /** PNG bytes, checked. */
  customerSignature: Buffer;
  driverSignature: Buffer;
}

export type CompletionRow = typeof completions.$inferSelect;

/** The completion as clients see it in the change feed. */
export function toCompletion(row: CompletionRow) {
  return {
    deliveryId: row.deliveryId,
    completedAt: row.completedAt.toISOString(),
    authorCarId: row.authorCarId,
    paymentMethodId: row.paymentMethodId,
    paymentId: row.paymentId,
    paymentCollected: row.paymentCollected,
    collectedAmountCents: row.collectedAmountCents,
    notesAcknowledged: row.notesAcknowledged,
    acknowledgedNoteIds: row.acknowledgedNoteIds,
    internalNote: row.internalNote,
    customerSignatureId: row.customerSignatureId,
    driverSignatureId: row.driverSignatureId,
    reportAttachmentId: row.reportAttachmentId,
  };
}

/** Trimmed; empty means none; longer than the limit is refused. */
export function normalizeInternalNote(value: string | null | undefined): string | null {
  const trimmed = value?.trim() ?? '';
  if (!trimmed) return null;
  // Characters as people count them: an emoji is one, not two UTF-16 units.
  if ([...trimmed].length > INTERNAL_NOTE_MAX) {
    throw validation(`The internal note has more than ${INTERNAL_NOTE_MAX} characters`, [
      { path: 'acknowledgements.internalNote', message: `at most ${INTERNAL_NOTE_MAX} characters` },
    ]);
  }
  return trimmed;
}

interface PaymentOutcome {
  paymentMethodId: string | null;
  paymentId: string | null;
  paymentCollected: boolean;
  collectedAmountCents: number;
}

/** A refusal of the request, as every REST mutation's (400): the id stands for another event or delivery. */
const reusedClientEventId = () => validation('This clientEventId was already used for another event',
  [{ path: 'acknowledgements.clientEventId', message: 'already used for another event' }]);

type Evaluation =
  | { kind: 'replay'; delivery: Delivery }
  | { kind: 'ready'; delivery: DeliveryRow; items: ItemRow[]; payment: PaymentOutcome; internalNote: string | null; acknowledgedNoteIds: string[] };

/** A delivery of one of the account's tours (locked when asked); undefined when unknown or foreign. */
export async function loadOwnDelivery(tx: Db, accountId: number, deliveryId: string, lock = false) {
  const query = tx.select({ delivery: deliveries }).from(deliveries)
    .innerJoin(tours, eq(tours.id, deliveries.tourId))
    .where(and(eq(deliveries.id, deliveryId), eq(tours.accountId, accountId)));
  const [found] = lock ? await query.for('update', { of: deliveries }) : await query;
  return found?.delivery;
}

/** The gates of the spec, in its order, under the delivery's row lock. */
async function evaluate(tx: Db, actor: DriverActor, deliveryId: string, ack: CompleteDeliveryAcknowledgements): Promise<Evaluation> {
  const internalNote = normalizeInternalNote(ack.internalNote);
  const delivery = await loadOwnDelivery(tx, actor.personalnummer, deliveryId, true);
  if (!delivery) throw notFound('Delivery');
  const itemRows = await tx.select({ item: deliveryItems, scannable: articles.scannable }).from(deliveryItems)
    .innerJoin(articles, eq(articles.id, deliveryItems.articleId))
    .where(eq(deliveryItems.deliveryId, deliveryId)).orderBy(asc(deliveryItems.lineNumber));
  const items = itemRows.map((r) => r.item);

  if (ack.clientEventId) {
    const [seen] = await tx.select().from(processedEvents).where(eq(processedEvents.eventId, ack.clientEventId));
    if (seen) {
      if (seen.type === COMPLETE_EVENT_TYPE && seen.deliveryId === deliveryId) return { kind: 'replay', delivery: toDelivery(delivery, items) };
      throw reusedClientEventId();
    }
  }

  const noteIds = new Set((await tx.select({ id: notes.id }).from(notes).where(eq(notes.deliveryId, deliveryId))).map((n) => n.id));
  const method = await effectiveMethod(tx, delivery, ack);
  const [latest] = await tx.select().from(paymentProtocol).where(eq(paymentProtocol.deliveryId, delivery.id))
    .orderBy(desc(paymentProtocol.receivedAt), desc(paymentProtocol.occurredAt)).limit(1);
  const gate = {
    state: delivery.state,
    positions: itemRows.map((r) => ({ ...r.item, scannable: r.scannable })),
    noteCount: noteIds.size,
    acknowledgements: ack,
    openAmountCents: toDelivery(delivery, items).openAmountCents,
    latestPaymentCents: latest?.amountCents ?? null,
    method: method === 'invalid' ? null : method ?? null,
  };
  const problem = completionProblem(gate);
  // A chosen method that cannot be used is a payment problem: reported after the gates before it.
  if (problem && problem.reason !== 'payment_not_collected') throw new DomainError(problem.code, problem.message, problem.errors);
  if (method === 'invalid') {
    throw validation('The payment method does not exist or is inactive', [{ path: 'acknowledgements.paymentMethodId', message: 'unknown or inactive payment method' }]);
  }
  if (problem) throw new DomainError(problem.code, problem.message, problem.errors);
  const payment = paymentOutcome(paymentSettlement(gate), gate.openAmountCents, method, latest, ack);

  if (ack.authorCarId) {
    const [car] = await tx.select({ id: cars.id }).from(cars).where(and(eq(cars.id, ack.authorCarId), eq(cars.accountId, actor.personalnummer)));
    if (!car) throw validation('The car does not belong to the account', [{ path: 'acknowledgements.authorCarId', message: 'not a car of the account' }]);
  }
  // Only the delivery's notes as they are now: an id the phone still showed may have been deleted meanwhile.
  const acknowledgedNoteIds = [...new Set(ack.acknowledgedNoteIds ?? [])].filter((id) => noteIds.has(id));
  return { kind: 'ready', delivery, items, payment, internalNote, acknowledgedNoteIds };
}

/** The method chosen at completion ('invalid' when unknown or inactive), else the one stored on the delivery. */
async function effectiveMethod(tx: Db, delivery: DeliveryRow, ack: CompleteDeliveryAcknowledgements) {
  if (ack.paymentMethodId) {
    const [method] = await tx.select().from(paymentMethods).where(eq(paymentMethods.id, ack.paymentMethodId));
    return method?.active ? method : 'invalid' as const;
  }
  if (!delivery.paymentMethodId) return undefined;
  const [method] = await tx.select().from(paymentMethods).where(eq(paymentMethods.id, delivery.paymentMethodId));
  return method;
}

/** What the completion records about the money; the amount always comes from the server. */
function paymentOutcome(
  settlement: PaymentSettlement, open: number, method: typeof paymentMethods.$inferSelect | undefined,
  latest: typeof paymentProtocol.$inferSelect | undefined, ack: CompleteDeliveryAcknowledgements,
): PaymentOutcome {
  const methodId = method?.id ?? null;
  switch (settlement) {
    case 'logged_payment':
      return { paymentMethodId: latest!.paymentMethodId, paymentId: latest!.id, paymentCollected: true, collectedAmountCents: latest!.amountCents };
    case 'collected_on_site':
      return { paymentMethodId: methodId, paymentId: null, paymentCollected: true, collectedAmountCents: open };
    case 'none_open':
      return { paymentMethodId: methodId, paymentId: null, paymentCollected: ack.paymentCollected === true, collectedAmountCents: 0 };
    case 'not_collected_on_site':
      return { paymentMethodId: methodId, paymentId: null, paymentCollected: false, collectedAmountCents: 0 };
  }
}

/**
 * Completes a delivery in one transaction under its row lock: the two signatures (attachments
 * with their bytes), the completion row, the new state, what the delivery report will show, the
 * processed event and the change records, all or nothing. A replay of the same clientEventId
 * returns the current delivery.
 */
export async function completeDelivery(db: Db, actor: DriverActor, request: CompletionRequest): Promise<{ delivery: Delivery; replayed: boolean }> {
  try {
    return await db.transaction(async (tx) => {
      const result = await evaluate(tx, actor, request.deliveryId, request.acknowledgements);
      if (result.kind === 'replay') return { delivery: result.delivery, replayed: true };
      const { acknowledgements: ack } = request;
      const now = new Date();
      const completedAt = completionTime(ack.occurredAt, now, result.delivery.createdAt);

      const signatures = ([['customer_signature', request.customerSignature], ['driver_signature', request.driverSignature]] as const)
        .map(([kind, bytes]) => ({ id: randomUUID(), kind, bytes }));
      const signatureRows: AttachmentRow[] = await tx.insert(attachments).values(signatures.map(({ id, kind, bytes }) => ({
        id, deliveryId: request.deliveryId, kind, reference: databaseReference(id), contentType: 'image/png', sizeBytes: bytes.length,
      }))).returning();
      await tx.insert(attachmentContents).values(signatures.map(({ id, bytes }) => ({ attachmentId: id, bytes })));
      const [customerSignature, driverSignature] = signatures;
      const [completion] = await tx.insert(completions).values({
        deliveryId: request.deliveryId,
        clientEventId: ack.clientEventId ?? null,
        accountId: actor.personalnummer,
        authorCarId: ack.authorCarId ?? null,
        ...result.payment,
        notesAcknowledged: ack.notesAcknowledged === true,
        acknowledgedNoteIds: result.acknowledgedNoteIds,
        internalNote: result.internalNote,
        customerSignatureId: customerSignature.id,
        driverSignatureId: driverSignature.id,
        completedAt,
      }).returning();
      // The method the completion settled on becomes the delivery's: a logged payment's (it
      // supplies the method), else one chosen at completion; with none the document's stays.
      const method = result.payment.paymentMethodId ? { paymentMethodId: result.payment.paymentMethodId } : {};
      const [updated] = await tx.update(deliveries).set({ state: 'completed', completedAt, updatedAt: now, ...method })
        .where(eq(deliveries.id, request.deliveryId)).returning();
      // The report is rendered after the commit, maybe much later: it shows the delivery as signed now.
      const reportSource = await readReportSource(tx, request.deliveryId);
      await tx.update(completions).set({ reportSource }).where(eq(completions.deliveryId, request.deliveryId));
      if (ack.clientEventId) {
        await tx.insert(processedEvents).values({
          eventId: ack.clientEventId, type: COMPLETE_EVENT_TYPE, accountId: actor.personalnummer,
          deliveryId: request.deliveryId,
        });
      }
      const delivery = toDelivery(updated, result.items);
      const scope = { tourId: updated.tourId, accountId: actor.personalnummer };
      await recordChanges(tx, [
        { entity: 'delivery', op: 'upsert', id: delivery.id, ...scope, data: delivery },
        ...signatureRows.map((row): ChangeRecord => ({ entity: 'attachment', op: 'upsert', id: row.id, ...scope, data: toAttachment(row) })),
        { entity: 'completion', op: 'upsert', id: completion.deliveryId, ...scope, data: toCompletion(completion) },
      ]);
      return { delivery, replayed: false };
    });
  } catch (error) {
    // The clientEventId was taken at the same moment by another event.
    if (constraintViolation(error)?.kind === 'unique') throw reusedClientEventId();
    throw error;
  }
}

// ---------- after commit: the report and the ERP write-back ----------

/** Everything the delivery report shows, read in one go after the completion committed. */
export async function loadCompletionRecord(db: Db, deliveryId: string) {
  const [row] = await db.select({ completion: completions, delivery: deliveries, tour: tours })
    .from(completions)
    .innerJoin(deliveries, eq(deliveries.id, completions.deliveryId))
    .innerJoin(tours, eq(tours.id, deliveries.tourId))
    .where(eq(completions.deliveryId, deliveryId));
  return row;
}

/** Links a stored report to its completion once; a second writer (another instance) changes nothing. */
export async function attachReport(db: Db, deliveryId: string, report: StoredFile): Promise<string | undefined> {
  return db.transaction(async (tx) => {
    const [locked] = await tx.select({ completion: completions, tourId: deliveries.tourId, accountId: tours.accountId })
      .from(completions)
      .innerJoin(deliveries, eq(deliveries.id, completions.deliveryId))
      .innerJoin(tours, eq(tours.id, deliveries.tourId))
      .where(eq(completions.deliveryId, deliveryId))
      .for('update', { of: completions });
    if (!locked || locked.completion.reportAttachmentId) return locked?.completion.reportAttachmentId ?? undefined;
    const [attachment] = await tx.insert(attachments).values({ deliveryId, kind: 'delivery_report', ...report }).returning();
    const [completion] = await tx.update(completions).set({ reportAttachmentId: attachment.id })
      .where(eq(completions.deliveryId, deliveryId)).returning();
    const scope = { tourId: locked.tourId, accountId: locked.accountId };
    await recordChanges(tx, [
      { entity: 'attachment', op: 'upsert', id: attachment.id, ...scope, data: toAttachment(attachment) },
      { entity: 'completion', op: 'upsert', id: deliveryId, ...scope, data: toCompletion(completion) },
    ]);
    return attachment.id;
  });
}
