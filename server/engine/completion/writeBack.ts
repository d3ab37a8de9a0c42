import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { ReportReference } from '../../../shared/schemas/erp.js';
import type { AppContext } from '../../context.js';
import type { Db } from '../../db/client.js';
import { attachments, completions, deliveries } from '../../db/schema.js';
import { notFound } from '../../errors.js';
import { completionIdempotencyKey } from '../../integrations/erp/gateway.js';
import { sendRecorded } from './pushOutcome.js';
import { reportFileName, storeDeliveryReport } from './report.js';

export { backoffMs } from './pushOutcome.js';

type WriteBackDeps = Pick<AppContext, 'database' | 'documents' | 'erp' | 'logger' | 'config'>;

/** A completion with its delivery. */
async function loadCompletionRecord(db: Db, deliveryId: string) {
  const [row] = await db
    .select({ completion: completions, delivery: deliveries })
    .from(completions)
    .innerJoin(deliveries, eq(deliveries.id, completions.deliveryId))
    .where(eq(completions.deliveryId, deliveryId));
  return row;
}

/**
 * The report the write-back names, stored first when it is not yet (the write-back waits for it:
 * the ERP deduplicates by key, so a copy sent later with the report would be dropped). Reports
 * stored before their hash was kept are hashed from the store.
 */
async function reportOf(
  deps: WriteBackDeps,
  deliveryId: string,
  belegnummer: string,
  attachmentId: string | null,
): Promise<ReportReference> {
  const id = attachmentId ?? (await storeDeliveryReport(deps, deliveryId));
  if (!id) throw notFound('Completed delivery');
  const [report] = await deps.database.db.select().from(attachments).where(eq(attachments.id, id));
  const sha256 =
    report.sha256 ??
    createHash('sha256')
      .update((await deps.documents.get(report.reference)).bytes)
      .digest('hex');
  return {
    reference: report.reference,
    fileName: reportFileName(belegnummer),
    contentType: 'application/pdf',
    sizeBytes: report.sizeBytes,
    sha256,
    downloadPath: `/admin/deliveries/${deliveryId}/report`,
  };
}

/**
 * Writes the completion back to the ERP (delivered-at, state, payment term, money credit and
 * the report; never line quantities) and records the outcome on the completion. A failure is
 * kept with the ERP's answer and rethrown; the completion itself stays.
 */
export async function pushCompletion(deps: WriteBackDeps, deliveryId: string): Promise<void> {
  const db = deps.database.db;
  const record = await loadCompletionRecord(db, deliveryId);
  if (!record) throw notFound('Completed delivery');
  const { completion, delivery } = record;
  const columns = {
    table: completions,
    status: 'erpPushStatus',
    attempts: 'erpPushAttempts',
    pushedAt: 'erpPushedAt',
    error: 'erpPushError',
    nextAttemptAt: 'erpNextAttemptAt',
  } as const;
  const where = eq(completions.deliveryId, deliveryId);
  await sendRecorded(deps, { columns, where, attemptsBefore: completion.erpPushAttempts, what: 'write-back', deliveryId }, async () => {
    const report = await reportOf(deps, deliveryId, delivery.belegnummer, completion.reportAttachmentId);
    await deps.erp.pushCompletion(
      { belegartId: delivery.belegartId, belegnummer: delivery.belegnummer },
      {
        deliveredAt: completion.completedAt.toISOString(),
        state: 'completed',
        paymentTerm: delivery.paymentTerm,
        creditAmountCents: delivery.creditAmountCents ?? 0,
        report,
      },
      completionIdempotencyKey(completion.deliveryId),
    );
  });
}
