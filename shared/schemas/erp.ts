import { z } from 'zod';
import { Timestamp } from './common.js';
import { SyncTourRequest } from './tours.js';

/**
 * The ERP gateway contract as Tourline calls it in `ERP_MODE=http` (docs/erp-integration.md):
 * the answer of `GET /tours?date=` and the bodies of the write-backs. Times are UTC.
 */

export const ErpToursAnswer = z
  .object({
    tours: z
      .array(SyncTourRequest)
      .describe('Every tour of the asked-for day, one per driver; each is checked on its own, a tour that does not fit is refused alone'),
  })
  .describe('Answer of GET /tours?date=YYYY-MM-DD (application/json)')
  .meta({ id: 'ErpToursAnswer' });

export const ReportReference = z
  .object({
    reference: z.string().describe('Key of the PDF in the document store (starts with `~`), as the store answered it'),
    fileName: z.string().describe('File name the report was stored under: `Lieferbericht-<belegnummer>.pdf`'),
    contentType: z.literal('application/pdf').describe('Always application/pdf'),
    sizeBytes: z.number().int().min(1).describe('Length of the PDF in bytes'),
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .describe('SHA-256 of the PDF bytes, lower-case hex: the ERP can check a copy it fetched from the store against it'),
    downloadPath: z.string().describe('Path on Tourline that answers the PDF with the admin key: `/admin/deliveries/{delivery id}/report`'),
  })
  .describe('The delivery report (PDF) that belongs to this completion')
  .meta({ id: 'ErpReportReference' });
export type ReportReference = z.infer<typeof ReportReference>;

export const CompletionWriteBack = z
  .object({
    deliveredAt: Timestamp.describe('When the driver completed the delivery (the device clock), ISO 8601 in UTC with milliseconds'),
    state: z.literal('completed').describe('Always `completed`'),
    paymentTerm: z
      .string()
      .nullable()
      .describe('The payment term the import brought for this document (`paymentTerm`), unchanged; null when none'),
    creditAmountCents: z
      .number()
      .int()
      .min(0)
      .describe(
        'Money credit granted by the driver in cents (0 to 15000, steps of 1000); 0 when none. Line quantities are never written back',
      ),
    report: ReportReference,
  })
  .describe('Body of POST /documents/{belegartId}/{belegnummer}/completion (application/json)')
  .meta({ id: 'ErpCompletionWriteBack' });
export type CompletionWriteBack = z.infer<typeof CompletionWriteBack>;

export const CancellationWriteBack = z
  .object({
    canceledAt: Timestamp.describe('When the driver canceled the delivery (the device clock), ISO 8601 in UTC with milliseconds'),
    state: z.literal('canceled').describe('Always `canceled`'),
    reason: z.string().min(1).describe("The driver's reason, as typed (trimmed)"),
  })
  .describe(
    'Body of POST /documents/{belegartId}/{belegnummer}/cancellation (application/json), sent only with ERP_PUSH_CANCELLATIONS=true',
  )
  .meta({ id: 'ErpCancellationWriteBack' });
export type CancellationWriteBack = z.infer<typeof CancellationWriteBack>;
