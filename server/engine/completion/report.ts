import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import type { Db } from '../../db/client.js';
import { attachments, completions, deliveries, tours } from '../../db/schema.js';
import { renderDeliveryReport } from '../../integrations/report/deliveryReport.js';
import { toCompletion } from '../../shapes/completion.js';
import { toAttachment } from '../../shapes/rows.js';
import { recordChanges } from '../changeLog.js';
import { loadReportSource } from './reportSource.js';

/** A file already written to the document store. */
export interface StoredFile {
  reference: string;
  contentType: string;
  sizeBytes: number;
  sha256?: string;
}

/** The name a delivery's report is stored under, and that the ERP write-back names. */
export const reportFileName = (belegnummer: string) => `Lieferbericht-${belegnummer}.pdf`;

type ReportDeps = Pick<AppContext, 'database' | 'documents' | 'config'>;

/** Renders the delivery report, stores it and links it to the completion; returns the attachment id. */
export async function storeDeliveryReport(deps: ReportDeps, deliveryId: string): Promise<string | undefined> {
  const source = await loadReportSource(deps.database.db, deliveryId);
  if (!source) return undefined;
  const { signatureReferences, ...data } = source;
  const [customer, driver] = await Promise.all([
    deps.documents.get(signatureReferences.customer),
    deps.documents.get(signatureReferences.driver),
  ]);
  const pdf = await renderDeliveryReport({
    ...data,
    companyName: deps.config.companyName,
    signatures: { customer: customer.bytes, driver: driver.bytes },
  });
  const reference = await deps.documents.put(pdf, 'application/pdf', reportFileName(data.belegnummer));
  const sha256 = createHash('sha256').update(pdf).digest('hex');
  return attachReport(deps.database.db, deliveryId, { reference, contentType: 'application/pdf', sizeBytes: pdf.length, sha256 });
}

/** Links a stored report to its completion once; a second writer (another instance) changes nothing. */
export async function attachReport(db: Db, deliveryId: string, report: StoredFile): Promise<string | undefined> {
  return db.transaction(async (tx) => {
    const [locked] = await tx
      .select({ completion: completions, tourId: deliveries.tourId, accountId: tours.accountId })
      .from(completions)
      .innerJoin(deliveries, eq(deliveries.id, completions.deliveryId))
      .innerJoin(tours, eq(tours.id, deliveries.tourId))
      .where(eq(completions.deliveryId, deliveryId))
      .for('update', { of: completions });
    if (!locked || locked.completion.reportAttachmentId) return locked?.completion.reportAttachmentId ?? undefined;
    const [attachment] = await tx
      .insert(attachments)
      .values({ deliveryId, kind: 'delivery_report', ...report })
      .returning();
    const [completion] = await tx
      .update(completions)
      .set({ reportAttachmentId: attachment.id })
      .where(eq(completions.deliveryId, deliveryId))
      .returning();
    const scope = { tourId: locked.tourId, accountId: locked.accountId };
    await recordChanges(tx, [
      { entity: 'attachment', op: 'upsert', id: attachment.id, ...scope, data: toAttachment(attachment) },
      { entity: 'completion', op: 'upsert', id: deliveryId, ...scope, data: toCompletion(completion) },
    ]);
    return attachment.id;
  });
}
