import { z } from 'zod';
import { IsoDate, Timestamp, Uuid } from './common.js';
import { PageFields } from './admin.js';
import { AdminErpPush } from './erpPush.js';

const Count = z.number().int().min(0);

/** What an import run did, by counters (snake_case like every admin answer). */
export const importCounters = {
  tours: Count.describe('Tours written (created or compared)'),
  tours_created: Count.describe('Tours that did not exist before'),
  deliveries_created: Count.describe('Deliveries that did not exist before'),
  deliveries_updated: Count.describe('Open deliveries whose ERP data, lines or contacts changed'),
  deliveries_unchanged: Count.describe('Deliveries sent as they were stored, or final ones the ERP sent unchanged'),
  deliveries_moved: Count.describe("Deliveries that came from another driver's tour"),
  deliveries_withdrawn: Count.describe('Deliveries nobody had worked on that the ERP withdrew: canceled with its reason'),
  withdrawals_refused: Count.describe(
    'Withdrawals of deliveries already worked on: kept as they are, numbers in `withdrawals_refused_belegnummern`',
  ),
  changes_ignored: Count.describe('Completed or canceled deliveries the ERP sent changed: not changed, numbers in `ignored_belegnummern`'),
  positions_created: Count.describe('Lines added'),
  positions_updated: Count.describe('Lines whose quantity, article, unit, price or warehouse changed'),
  positions_deleted: Count.describe('Lines no longer sent that nobody had worked on'),
};
export type ImportCounters = { [K in keyof typeof importCounters]: number };

/** The document numbers behind some counters. */
export const importDetails = {
  ignored_belegnummern: z
    .array(z.string())
    .describe('Numbers of the completed or canceled deliveries whose changes were ignored (final deliveries never change)'),
  withdrawals_refused_belegnummern: z
    .array(z.string())
    .describe('Numbers of the deliveries the ERP withdrew although a driver had worked on them: they stay as they are'),
};
export type ImportDetails = { [K in keyof typeof importDetails]: string[] };

const runFields = {
  run_id: Uuid,
  target_date: IsoDate.describe('The tour date imported'),
  trigger: z.enum(['scheduler', 'startup', 'manual', 'retry']).describe('What started the run; `retry` is a try again after a failed run'),
  success: z.boolean().describe('Every tour of the day was read and written'),
  skipped: z.boolean().describe('Another run of the same date was under way (on this or another instance): this one did nothing'),
  started_at: Timestamp,
  ...importCounters,
  ...importDetails,
  error: z
    .string()
    .nullable()
    .describe("Why the run failed: the ERP's failure, or each refused tour with its driver's Personalnummer and the document number"),
};

/** Answer of POST /admin/import-erp. */
export const ImportSummary = z.object({ ...runFields, finished_at: Timestamp }).meta({ id: 'ImportSummary' });
export type ImportSummary = z.infer<typeof ImportSummary>;

/** One entry of GET /admin/import-runs; `finished_at` is null while the run is under way. */
export const ImportRun = z.object({ ...runFields, finished_at: Timestamp.nullable() }).meta({ id: 'ImportRun' });
export type ImportRun = z.infer<typeof ImportRun>;

export const ImportRunsQuery = z.object({
  date: IsoDate.optional().describe('Only runs of this tour date (YYYY-MM-DD)'),
  ...PageFields,
});

export const ImportRunList = z
  .object({ count: z.number().int().min(0).describe('Entries in this answer'), runs: z.array(ImportRun).describe('Newest first') })
  .meta({ id: 'ImportRunList' });
export type ImportRunList = z.infer<typeof ImportRunList>;

export const ErpWriteBackStatus = AdminErpPush.shape.status.describe(
  'pending: not sent yet; failed: tried again with backoff; rejected: the ERP refused it (4xx), waits for an admin push; succeeded',
);

export const ErpWriteBack = z
  .object({
    kind: z.enum(['completion', 'cancellation']),
    delivery_id: Uuid,
    belegart_id: z.number().int(),
    belegnummer: z.string(),
    idempotency_key: z.string().describe('The Idempotency-Key every copy of this write-back carries'),
    recorded_at: Timestamp.describe('When the completion or cancellation reached Tourline'),
    status: ErpWriteBackStatus,
    attempts: z.number().int().min(0),
    pushed_at: Timestamp.nullable().describe('When the ERP accepted it'),
    error: z.string().nullable().describe("The last failure, with the ERP's answer (truncated) when it refused"),
    next_attempt_at: Timestamp.nullable().describe('When it is tried again by itself; null when succeeded or rejected'),
  })
  .meta({ id: 'ErpWriteBack' });
export type ErpWriteBack = z.infer<typeof ErpWriteBack>;

export const ErpWriteBacksQuery = z.object({
  status: ErpWriteBackStatus.optional().describe('Only write-backs of this status; without it, all that have not succeeded'),
  ...PageFields,
});

export const ErpWriteBackList = z
  .object({
    count: z.number().int().min(0).describe('Entries in this answer'),
    write_backs: z.array(ErpWriteBack).describe('Oldest first'),
  })
  .meta({ id: 'ErpWriteBackList' });
