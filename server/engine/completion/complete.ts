import { newId } from '../../../shared/ids.js';
import { eq } from 'drizzle-orm';
import { completionTime } from '../../../shared/rules/completion.js';
import type { CompleteDeliveryAcknowledgements, Delivery } from '../../../shared/schemas/deliveries.js';
import type { DriverActor } from '../../context.js';
import type { Db } from '../../db/client.js';
import { constraintViolation } from '../../db/errors.js';
import { attachmentContents, attachments, completions, deliveries, processedEvents } from '../../db/schema.js';
import { databaseReference } from '../../integrations/documents/database.js';
import { toCompletion } from '../../shapes/completion.js';
import { toAttachment, toDelivery, type AttachmentRow } from '../../shapes/rows.js';
import { recordChanges, type ChangeRecord } from '../changeLog.js';
import { keepCompletedEntryHead } from '../completedEntries.js';
import { afterCompletion, type FollowUpDeps } from './followUp.js';
import { COMPLETE_EVENT_TYPE, evaluate, reusedClientEventId } from './gates.js';
import { readReportSource } from './reportSource.js';

export interface CompletionRequest {
  deliveryId: string;
  acknowledgements: CompleteDeliveryAcknowledgements;
  /** PNG bytes, checked. */
  customerSignature: Buffer;
  driverSignature: Buffer;
}

/**
 * Completes a delivery, then starts what follows a completion (the report, the ERP write-back;
 * see followUp.ts). A replay of the same clientEventId answers the current delivery and starts
 * nothing.
 */
export async function completeDelivery(deps: FollowUpDeps, actor: DriverActor, request: CompletionRequest): Promise<Delivery> {
  const result = await commit(deps.database.db, actor, request);
  if (!result.replayed) await afterCompletion(deps, request.deliveryId);
  return result.delivery;
}

/**
 * The completion in one transaction under the delivery's row lock: the two signatures
 * (attachments with their bytes), the completion row, the new state, what the delivery report
 * will show, the processed event and the change records, all or nothing.
 */
async function commit(db: Db, actor: DriverActor, request: CompletionRequest): Promise<{ delivery: Delivery; replayed: boolean }> {
  try {
    return await db.transaction(async (tx) => {
      const result = await evaluate(tx, actor, request.deliveryId, request.acknowledgements);
      if (result.kind === 'replay') return { delivery: result.delivery, replayed: true };
      const { acknowledgements: ack } = request;
      const now = new Date();
      const completedAt = completionTime(ack.occurredAt, now, result.delivery.createdAt);

      const signatures = (
        [
          ['customer_signature', request.customerSignature],
          ['driver_signature', request.driverSignature],
        ] as const
      ).map(([kind, bytes]) => ({ id: newId(), kind, bytes }));
      const signatureRows: AttachmentRow[] = await tx
        .insert(attachments)
        .values(
          signatures.map(({ id, kind, bytes }) => ({
            id,
            deliveryId: request.deliveryId,
            kind,
            reference: databaseReference(id),
            contentType: 'image/png',
            sizeBytes: bytes.length,
          })),
        )
        .returning();
      await tx.insert(attachmentContents).values(signatures.map(({ id, bytes }) => ({ attachmentId: id, bytes })));
      const [customerSignature, driverSignature] = signatures;
      const [completion] = await tx
        .insert(completions)
        .values({
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
        })
        .returning();
      // The method the completion settled on becomes the delivery's: a logged payment's (it
      // supplies the method), else one chosen at completion; with none the document's stays.
      const method = result.payment.paymentMethodId ? { paymentMethodId: result.payment.paymentMethodId } : {};
      const [updated] = await tx
        .update(deliveries)
        .set({ state: 'completed', completedAt, updatedAt: now, ...method })
        .where(eq(deliveries.id, request.deliveryId))
        .returning();
      await keepCompletedEntryHead(tx, eq(deliveries.id, request.deliveryId));
      // The report is rendered after the commit, maybe much later: it shows the delivery as signed now.
      const reportSource = await readReportSource(tx, request.deliveryId);
      await tx.update(completions).set({ reportSource }).where(eq(completions.deliveryId, request.deliveryId));
      if (ack.clientEventId) {
        await tx.insert(processedEvents).values({
          eventId: ack.clientEventId,
          type: COMPLETE_EVENT_TYPE,
          accountId: actor.personalnummer,
          deliveryId: request.deliveryId,
        });
      }
      const delivery = toDelivery(updated, result.items);
      const scope = { tourId: updated.tourId, accountId: actor.personalnummer };
      await recordChanges(tx, [
        { entity: 'delivery', op: 'upsert', id: delivery.id, ...scope, data: delivery },
        ...signatureRows.map((row): ChangeRecord => ({
          entity: 'attachment',
          op: 'upsert',
          id: row.id,
          ...scope,
          data: toAttachment(row),
        })),
        {
          entity: 'completion',
          op: 'upsert',
          id: completion.deliveryId,
          ...scope,
          data: toCompletion(completion),
          ...(ack.clientEventId ? { eventIds: [ack.clientEventId] } : {}),
        },
      ]);
      return { delivery, replayed: false };
    });
  } catch (error) {
    // The clientEventId was taken at the same moment by another event.
    if (constraintViolation(error)?.kind === 'unique') throw reusedClientEventId();
    throw error;
  }
}
