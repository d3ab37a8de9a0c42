import { sql } from 'drizzle-orm';
import { bigserial, boolean, date, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { id, createdAt, ts, writtenAt, personalnummer } from './columns.js';
import { accounts, cars, paymentMethods } from './masterData.js';
import { deliveries, itemStates, deliveryItems, attachments } from './deliveries.js';

export const scanAudit = pgTable(
  'scan_audit',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    clientScanId: uuid('client_scan_id').notNull(),
    deliveryId: uuid('delivery_id').notNull(),
    deliveryItemId: uuid('delivery_item_id')
      .notNull()
      .references(() => deliveryItems.id),
    action: text('action', { enum: ['scan', 'unscan', 'hold', 'unhold', 'remove', 'unremove'] }).notNull(),
    quantity: integer('quantity'),
    reason: text('reason'),
    scannedQuantityAfter: integer('scanned_quantity_after').notNull(),
    creditedQuantityAfter: integer('credited_quantity_after').notNull(),
    stateAfter: text('state_after', { enum: itemStates }).notNull(),
    accountId: personalnummer('account_id').notNull(),
    authorCarId: uuid('author_car_id'),
    occurredAt: ts('occurred_at').notNull(),
    receivedAt: writtenAt('received_at'),
  },
  (t) => [
    uniqueIndex('scan_audit_client_scan_uq').on(t.clientScanId),
    index('scan_audit_delivery_idx').on(t.deliveryId),
    // scan_audit_review_idx: built after the migrations (db/lateIndexes.ts).
  ],
);

/** Append-only log of money credit actions; the current credit is kept on the delivery. */
export const creditEvents = pgTable(
  'credit_events',
  {
    id: id(),
    clientEventId: uuid('client_event_id').notNull(),
    deliveryId: uuid('delivery_id')
      .notNull()
      .references(() => deliveries.id),
    action: text('action', { enum: ['set', 'remove'] }).notNull(),
    amountCents: integer('amount_cents'),
    reason: text('reason'),
    accountId: personalnummer('account_id')
      .notNull()
      .references(() => accounts.personalnummer),
    authorCarId: uuid('author_car_id').references(() => cars.id),
    occurredAt: ts('occurred_at').notNull(),
    receivedAt: writtenAt('received_at'),
  },
  (t) => [uniqueIndex('credit_events_client_uq').on(t.clientEventId), index('credit_events_delivery_idx').on(t.deliveryId)],
);

/** Append-only payment protocol ("Abkassieren"). */
export const paymentProtocol = pgTable(
  'payment_protocol',
  {
    id: id(),
    clientEventId: uuid('client_event_id').notNull(),
    deliveryId: uuid('delivery_id')
      .notNull()
      .references(() => deliveries.id),
    paymentMethodId: uuid('payment_method_id')
      .notNull()
      .references(() => paymentMethods.id),
    paymentMethodCode: text('payment_method_code').notNull(),
    amountCents: integer('amount_cents').notNull(),
    accountId: personalnummer('account_id')
      .notNull()
      .references(() => accounts.personalnummer),
    authorCarId: uuid('author_car_id').references(() => cars.id),
    occurredAt: ts('occurred_at').notNull(),
    receivedAt: ts('received_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('payment_protocol_client_uq').on(t.clientEventId), index('payment_protocol_delivery_idx').on(t.deliveryId)],
);

/**
 * Where a write-back to the ERP stands: `failed` is tried again with backoff; `rejected` (the ERP
 * answered a 4xx other than 408 and 429) waits for `POST /admin/push-...`, as it would fail alike.
 */
export const erpPushStates = ['pending', 'succeeded', 'failed', 'rejected'] as const;

export const completions = pgTable(
  'completions',
  {
    deliveryId: uuid('delivery_id')
      .primaryKey()
      .references(() => deliveries.id),
    clientEventId: uuid('client_event_id'),
    accountId: personalnummer('account_id')
      .notNull()
      .references(() => accounts.personalnummer),
    authorCarId: uuid('author_car_id').references(() => cars.id),
    paymentMethodId: uuid('payment_method_id').references(() => paymentMethods.id),
    paymentId: uuid('payment_id').references(() => paymentProtocol.id),
    paymentCollected: boolean('payment_collected').notNull().default(false),
    collectedAmountCents: integer('collected_amount_cents').notNull().default(0),
    notesAcknowledged: boolean('notes_acknowledged').notNull().default(false),
    acknowledgedNoteIds: jsonb('acknowledged_note_ids').$type<string[]>().notNull().default([]),
    internalNote: text('internal_note'),
    customerSignatureId: uuid('customer_signature_id')
      .notNull()
      .references(() => attachments.id),
    driverSignatureId: uuid('driver_signature_id')
      .notNull()
      .references(() => attachments.id),
    reportAttachmentId: uuid('report_attachment_id').references(() => attachments.id),
    /**
     * What the delivery report shows, kept by the completion's transaction: a report rendered later
     * (document store down) must not show what changed after the signatures. Null for completions
     * made before it was kept. Written in the completion (`completeDelivery`), read by the report
     * (`loadReportSource`), both through `server/engine/completion/reportSource.ts`.
     */
    reportSource: jsonb('report_source'),
    /** When the driver completed the delivery (the device's time, see `completionTime`). */
    completedAt: ts('completed_at').notNull(),
    receivedAt: writtenAt('received_at'),
    erpPushStatus: text('erp_push_status', { enum: erpPushStates }).notNull().default('pending'),
    erpPushAttempts: integer('erp_push_attempts').notNull().default(0),
    erpPushedAt: ts('erp_pushed_at'),
    erpPushError: text('erp_push_error'),
    erpNextAttemptAt: ts('erp_next_attempt_at'),
  },
  (t) => [
    uniqueIndex('completions_client_event_uq').on(t.clientEventId),
    // completions_follow_up_idx: built after the migrations (db/lateIndexes.ts).
  ],
);

export const reviewResolutions = pgTable(
  'review_resolutions',
  {
    id: id(),
    deliveryId: uuid('delivery_id')
      .notNull()
      .references(() => deliveries.id),
    processor: text('processor').notNull(),
    /** The back-office token's subject; null when the admin key resolved it. */
    processorSubject: text('processor_subject'),
    /** The delivery's latest deviation-relevant change when it was confirmed: what was confirmed. */
    confirmedChangeAt: ts('confirmed_change_at'),
    resolvedAt: writtenAt('resolved_at'),
  },
  (t) => [index('review_resolutions_delivery_idx').on(t.deliveryId)],
);

// ---------- operations ----------

export const erpImportRuns = pgTable(
  'erp_import_runs',
  {
    id: id(),
    targetDate: date('target_date', { mode: 'string' }).notNull(),
    trigger: text('trigger', { enum: ['scheduler', 'startup', 'manual', 'retry'] }).notNull(),
    startedAt: ts('started_at').notNull().defaultNow(),
    finishedAt: ts('finished_at'),
    success: boolean('success').notNull().default(false),
    skipped: boolean('skipped').notNull().default(false),
    counters: jsonb('counters').$type<Record<string, number>>().notNull().default({}),
    /** The document numbers behind some counters (ImportRunDetails in shared/schemas/imports.ts). */
    details: jsonb('details').$type<Record<string, string[]>>().notNull().default({}),
    error: text('error'),
  },
  (t) => [index('erp_import_runs_target_idx').on(t.targetDate), index('erp_import_runs_started_idx').on(t.startedAt, t.id)],
);

/**
 * A driver's cancellation, recorded by the event engine in the cancel's transaction, and its
 * write-back to the ERP (sent only with ERP_PUSH_CANCELLATIONS; states as `erpPushStates`).
 */
export const erpCancellations = pgTable(
  'erp_cancellations',
  {
    deliveryId: uuid('delivery_id')
      .primaryKey()
      .references(() => deliveries.id),
    canceledAt: ts('canceled_at').notNull(),
    reason: text('reason').notNull(),
    receivedAt: writtenAt('received_at'),
    pushStatus: text('push_status', { enum: erpPushStates }).notNull().default('pending'),
    pushAttempts: integer('push_attempts').notNull().default(0),
    pushedAt: ts('pushed_at'),
    pushError: text('push_error'),
    nextAttemptAt: ts('next_attempt_at'),
  },
  (t) => [
    index('erp_cancellations_due_idx')
      .on(t.receivedAt)
      .where(sql`push_status IN ('pending', 'failed')`),
  ],
);

/** What a recorded rejection answered: a copy of the event answers `duplicate` with it. */
export interface RecordedRejection {
  code: string;
  reason: string;
  message: string;
  errors?: { path: string; message: string }[];
}

/**
 * Every client event id decided, recorded in the same transaction as its effect: applied, or
 * refused for what was stored then (`rejection`). No foreign keys, for the reason given at
 * `scanAudit`: accounts and deliveries are never deleted.
 */
export const processedEvents = pgTable('processed_events', {
  eventId: uuid('event_id').primaryKey(),
  type: text('type').notNull(),
  clientId: text('client_id'),
  accountId: personalnummer('account_id').notNull(),
  deliveryId: uuid('delivery_id'),
  occurredAt: ts('occurred_at'),
  receivedAt: ts('received_at').notNull().defaultNow(),
  rejection: jsonb('rejection').$type<RecordedRejection>(),
});

/**
 * Every change to synced entities. `seq` is assigned while the writer holds the change-log
 * lock until commit, so seq order is commit order and a cursor never skips a change.
 */
export const changeLog = pgTable(
  'change_log',
  {
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    entity: text('entity').notNull(),
    op: text('op', { enum: ['upsert', 'delete'] }).notNull(),
    entityId: text('entity_id').notNull(),
    tourId: uuid('tour_id'),
    // Owner of the change; null for data every account sees (payment methods, services).
    accountId: personalnummer('account_id'),
    data: jsonb('data'),
    // The client events whose effects are complete once this change is applied (see Change.eventIds).
    eventIds: uuid('event_ids').array(),
    createdAt: createdAt(),
  },
  (t) => [index('change_log_account_seq_idx').on(t.accountId, t.seq)],
);

export const meta = pgTable('meta', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
});
