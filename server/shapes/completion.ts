import type { Completion } from '../../shared/schemas/deliveries.js';
import type { completions } from '../db/schema.js';

export type CompletionRow = typeof completions.$inferSelect;

/** The completion as clients see it in the change feed. */
export function toCompletion(row: CompletionRow): Completion {
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
