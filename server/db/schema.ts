import { sql } from 'drizzle-orm';
import {
  bigint, bigserial, boolean, check, customType, date, index, integer, jsonb, pgTable, primaryKey, text, timestamp,
  uniqueIndex, uuid,
} from 'drizzle-orm/pg-core';
import type { Address, ContactRole } from '../../shared/schemas/common.js';

const id = () => uuid('id').primaryKey().defaultRandom();
const createdAt = () => timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();
const updatedAt = () => timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();
const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
/**
 * When the statement that writes the row ran, not when its transaction began. Deviations and
 * review confirmations of a delivery are written under the delivery's row lock, so these times
 * order them as they happened; a transaction's start could predate a confirmation it commits after.
 */
const writtenAt = (name: string) => ts(name).notNull().default(sql`statement_timestamp()`);
const personalnummer = (name: string) => bigint(name, { mode: 'number' });
// pg answers a Buffer, PGlite a Uint8Array.
const bytea = customType<{ data: Buffer; driverData: Uint8Array }>({ dataType: () => 'bytea', fromDriver: (value) => Buffer.from(value) });

// ---------- accounts and master data maintained through the API ----------

export const accounts = pgTable('accounts', {
  personalnummer: personalnummer('personalnummer').primaryKey(),
  name: text('name').notNull(),
  active: boolean('active').notNull().default(true),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
});

export const cars = pgTable('cars', {
  id: id(),
  accountId: personalnummer('account_id').notNull().references(() => accounts.personalnummer),
  plate: text('plate').notNull(),
  // Plates are unique after trimming and case folding; the key carries that normal form.
  plateKey: text('plate_key').notNull(),
  active: boolean('active').notNull().default(true),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
}, (t) => [uniqueIndex('cars_plate_key_uq').on(t.plateKey), index('cars_account_idx').on(t.accountId)]);

export const paymentMethods = pgTable('payment_methods', {
  id: id(),
  code: text('code').notNull(),
  name: text('name').notNull(),
  collectOnSite: boolean('collect_on_site').notNull().default(false),
  active: boolean('active').notNull().default(true),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
}, (t) => [uniqueIndex('payment_methods_code_uq').on(t.code)]);

export const services = pgTable('services', {
  id: id(),
  key: text('key').notNull(),
  name: text('name').notNull(),
  kind: text('kind', { enum: ['boolean', 'numeric'] }).notNull(),
  minValue: integer('min_value'),
  maxValue: integer('max_value'),
  sortOrder: integer('sort_order'),
  active: boolean('active').notNull().default(true),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
}, (t) => [
  uniqueIndex('services_key_uq').on(t.key),
  check('services_limits_ck', sql`${t.minValue} IS NULL OR ${t.maxValue} IS NULL OR ${t.minValue} <= ${t.maxValue}`),
]);

// ---------- ERP mirror data ----------

export const customers = pgTable('customers', {
  id: id(),
  erpCustomerId: personalnummer('erp_customer_id').notNull(),
  name: text('name').notNull(),
  address: jsonb('address').$type<Address>().notNull(),
  updatedAt: updatedAt(),
}, (t) => [uniqueIndex('customers_erp_id_uq').on(t.erpCustomerId)]);

export const warehouses = pgTable('warehouses', {
  id: id(),
  code: text('code').notNull(),
  name: text('name').notNull(),
  updatedAt: updatedAt(),
}, (t) => [uniqueIndex('warehouses_code_uq').on(t.code)]);

export const articles = pgTable('articles', {
  id: id(),
  articleNumber: text('article_number').notNull(),
  name: text('name').notNull(),
  scannable: boolean('scannable').notNull(),
  defaultWarehouseId: uuid('default_warehouse_id').references(() => warehouses.id),
  updatedAt: updatedAt(),
}, (t) => [uniqueIndex('articles_number_uq').on(t.articleNumber), index('articles_default_warehouse_idx').on(t.defaultWarehouseId)]);

// ---------- tours, deliveries, positions ----------

export const tours = pgTable('tours', {
  id: id(),
  accountId: personalnummer('account_id').notNull().references(() => accounts.personalnummer),
  tourDate: date('tour_date', { mode: 'string' }).notNull(),
  name: text('name'),
  /** When the driver first set the order (PUT delivery-order); from then on a re-sync keeps it. */
  orderedByDriverAt: ts('ordered_by_driver_at'),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
}, (t) => [uniqueIndex('tours_account_date_uq').on(t.accountId, t.tourDate)]);

export const deliveryStates = ['active', 'held', 'canceled', 'completed'] as const;

export const deliveries = pgTable('deliveries', {
  id: id(),
  tourId: uuid('tour_id').notNull().references(() => tours.id),
  belegartId: integer('belegart_id').notNull(),
  belegnummer: text('belegnummer').notNull(),
  customerId: uuid('customer_id').notNull().references(() => customers.id),
  // Immutable snapshot taken when the delivery was first created.
  deliveryAddress: jsonb('delivery_address').$type<Address>().notNull(),
  state: text('state', { enum: deliveryStates }).notNull().default('active'),
  stateReason: text('state_reason'),
  sortOrder: integer('sort_order').notNull(),
  erpSequence: integer('erp_sequence'),
  erpOpenAmountCents: integer('erp_open_amount_cents').notNull().default(0),
  paymentMethodId: uuid('payment_method_id').references(() => paymentMethods.id),
  erpPaymentMethodCode: text('erp_payment_method_code'),
  paymentTerm: text('payment_term'),
  assignedCarId: uuid('assigned_car_id').references(() => cars.id),
  // Current money credit, kept beside the append-only credit_events in the same transaction.
  creditAmountCents: integer('credit_amount_cents'),
  creditReason: text('credit_reason'),
  creditUpdatedAt: ts('credit_updated_at'),
  completedAt: ts('completed_at'),
  mailSentAt: ts('mail_sent_at'),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
}, (t) => [
  uniqueIndex('deliveries_beleg_uq').on(t.belegartId, t.belegnummer),
  index('deliveries_tour_idx').on(t.tourId),
  index('deliveries_belegnummer_idx').on(t.belegnummer),
  index('deliveries_completed_idx').on(t.completedAt),
  // Who to tell of changed master data (tourSync's masterDataForOthers).
  index('deliveries_customer_idx').on(t.customerId),
  // deliveries_mail_open_idx: built after the migrations (db/lateIndexes.ts).
]);

export const itemStates = ['InProgress', 'Done', 'Removed', 'Held'] as const;

export const deliveryItems = pgTable('delivery_items', {
  id: id(),
  deliveryId: uuid('delivery_id').notNull().references(() => deliveries.id),
  lineNumber: integer('line_number').notNull(),
  articleId: uuid('article_id').notNull().references(() => articles.id),
  warehouseId: uuid('warehouse_id').references(() => warehouses.id),
  requiredQuantity: integer('required_quantity').notNull(),
  scannedQuantity: integer('scanned_quantity').notNull().default(0),
  creditedQuantity: integer('credited_quantity').notNull().default(0),
  state: text('state', { enum: itemStates }).notNull().default('InProgress'),
  unit: text('unit'),
  unitPriceCents: integer('unit_price_cents'),
  updatedAt: updatedAt(),
}, (t) => [
  uniqueIndex('delivery_items_line_uq').on(t.deliveryId, t.lineNumber),
  index('delivery_items_article_idx').on(t.articleId),
  index('delivery_items_warehouse_idx').on(t.warehouseId),
  check('delivery_items_quantities_ck', sql`${t.scannedQuantity} >= 0 AND ${t.creditedQuantity} >= 0 AND ${t.requiredQuantity} >= 1`),
]);

export const contactSources = pgTable('contact_sources', {
  id: id(),
  deliveryId: uuid('delivery_id').notNull().references(() => deliveries.id),
  role: text('role').$type<ContactRole>().notNull(),
  roles: jsonb('roles').$type<ContactRole[]>().notNull(),
  position: integer('position').notNull(),
  anrede: text('anrede'),
  titel: text('titel'),
  name1: text('name1'),
  name2: text('name2'),
  name3: text('name3'),
  abteilung: text('abteilung'),
  funktion: text('funktion'),
  address: jsonb('address').$type<Address | null>(),
}, (t) => [index('contact_sources_delivery_idx').on(t.deliveryId)]);

export const contactChannels = pgTable('contact_channels', {
  id: id(),
  sourceId: uuid('source_id').notNull().references(() => contactSources.id, { onDelete: 'cascade' }),
  kind: text('kind', { enum: ['phone', 'mobile', 'email', 'web'] }).notNull(),
  position: integer('position').notNull(),
  value: text('value').notNull(),
}, (t) => [uniqueIndex('contact_channels_uq').on(t.sourceId, t.kind, t.value)]);

// ---------- driver work on a delivery ----------

export const notes = pgTable('notes', {
  id: id(),
  deliveryId: uuid('delivery_id').notNull().references(() => deliveries.id),
  text: text('text'),
  imageAttachment: text('image_attachment'),
  authorCarId: uuid('author_car_id').references(() => cars.id),
  creditDeliveryItemId: uuid('credit_delivery_item_id').references(() => deliveryItems.id),
  isAmountCreditNote: boolean('is_amount_credit_note').notNull().default(false),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
}, (t) => [index('notes_delivery_idx').on(t.deliveryId)]);

/**
 * Append-only log of every scan action. Only the line is a foreign key: lines are the one thing
 * here that gets deleted (by the tour import, and only lines no audit row names, which the key
 * keeps true under races). Deliveries, accounts and cars are never deleted and the engine holds
 * the delivery's lock while it writes; a key check on them would cost a locking read per row,
 * most of the write's time at thousands of scans a second.
 */
export const scanAudit = pgTable('scan_audit', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  clientScanId: uuid('client_scan_id').notNull(),
  deliveryId: uuid('delivery_id').notNull(),
  deliveryItemId: uuid('delivery_item_id').notNull().references(() => deliveryItems.id),
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
}, (t) => [
  uniqueIndex('scan_audit_client_scan_uq').on(t.clientScanId), index('scan_audit_delivery_idx').on(t.deliveryId),
  // scan_audit_review_idx: built after the migrations (db/lateIndexes.ts).
]);

/** Append-only log of money credit actions; the current credit is kept on the delivery. */
export const creditEvents = pgTable('credit_events', {
  id: id(),
  clientEventId: uuid('client_event_id').notNull(),
  deliveryId: uuid('delivery_id').notNull().references(() => deliveries.id),
  action: text('action', { enum: ['set', 'remove'] }).notNull(),
  amountCents: integer('amount_cents'),
  reason: text('reason'),
  accountId: personalnummer('account_id').notNull().references(() => accounts.personalnummer),
  authorCarId: uuid('author_car_id').references(() => cars.id),
  occurredAt: ts('occurred_at').notNull(),
  receivedAt: writtenAt('received_at'),
}, (t) => [uniqueIndex('credit_events_client_uq').on(t.clientEventId), index('credit_events_delivery_idx').on(t.deliveryId)]);

/** Append-only payment protocol ("Abkassieren"). */
export const paymentProtocol = pgTable('payment_protocol', {
  id: id(),
  clientEventId: uuid('client_event_id').notNull(),
  deliveryId: uuid('delivery_id').notNull().references(() => deliveries.id),
  paymentMethodId: uuid('payment_method_id').notNull().references(() => paymentMethods.id),
  paymentMethodCode: text('payment_method_code').notNull(),
  amountCents: integer('amount_cents').notNull(),
  accountId: personalnummer('account_id').notNull().references(() => accounts.personalnummer),
  authorCarId: uuid('author_car_id').references(() => cars.id),
  occurredAt: ts('occurred_at').notNull(),
  receivedAt: ts('received_at').notNull().defaultNow(),
}, (t) => [uniqueIndex('payment_protocol_client_uq').on(t.clientEventId), index('payment_protocol_delivery_idx').on(t.deliveryId)]);

export const deliveryServiceValues = pgTable('delivery_service_values', {
  deliveryId: uuid('delivery_id').notNull().references(() => deliveries.id),
  serviceId: uuid('service_id').notNull().references(() => services.id),
  boolValue: boolean('bool_value'),
  numericValue: integer('numeric_value'),
  authorCarId: uuid('author_car_id').references(() => cars.id),
  updatedAt: updatedAt(),
}, (t) => [primaryKey({ columns: [t.deliveryId, t.serviceId] }), index('delivery_service_values_service_idx').on(t.serviceId)]);

export const attachmentKinds = ['customer_signature', 'driver_signature', 'note_image', 'delivery_report'] as const;

export const attachments = pgTable('attachments', {
  id: id(),
  deliveryId: uuid('delivery_id').notNull().references(() => deliveries.id),
  noteId: uuid('note_id'),
  kind: text('kind', { enum: attachmentKinds }).notNull(),
  reference: text('reference').notNull(),
  contentType: text('content_type').notNull(),
  sizeBytes: integer('size_bytes').notNull(),
  createdAt: createdAt(),
}, (t) => [index('attachments_delivery_idx').on(t.deliveryId), index('attachments_reference_idx').on(t.reference)]);

/**
 * The bytes of the attachments the service keeps itself: the signatures, which the spec has stored
 * locally, written in the transaction that completes their delivery (so a completion never fails
 * with the document store). Their attachments' reference is `~db/<attachment id>`.
 */
export const attachmentContents = pgTable('attachment_contents', {
  attachmentId: uuid('attachment_id').primaryKey().references(() => attachments.id),
  bytes: bytea('bytes').notNull(),
});

export const completions = pgTable('completions', {
  deliveryId: uuid('delivery_id').primaryKey().references(() => deliveries.id),
  clientEventId: uuid('client_event_id'),
  accountId: personalnummer('account_id').notNull().references(() => accounts.personalnummer),
  authorCarId: uuid('author_car_id').references(() => cars.id),
  paymentMethodId: uuid('payment_method_id').references(() => paymentMethods.id),
  paymentId: uuid('payment_id').references(() => paymentProtocol.id),
  paymentCollected: boolean('payment_collected').notNull().default(false),
  collectedAmountCents: integer('collected_amount_cents').notNull().default(0),
  notesAcknowledged: boolean('notes_acknowledged').notNull().default(false),
  acknowledgedNoteIds: jsonb('acknowledged_note_ids').$type<string[]>().notNull().default([]),
  internalNote: text('internal_note'),
  customerSignatureId: uuid('customer_signature_id').notNull().references(() => attachments.id),
  driverSignatureId: uuid('driver_signature_id').notNull().references(() => attachments.id),
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
  erpPushStatus: text('erp_push_status', { enum: ['pending', 'succeeded', 'failed'] }).notNull().default('pending'),
  erpPushAttempts: integer('erp_push_attempts').notNull().default(0),
  erpPushedAt: ts('erp_pushed_at'),
  erpPushError: text('erp_push_error'),
  erpNextAttemptAt: ts('erp_next_attempt_at'),
}, (t) => [
  uniqueIndex('completions_client_event_uq').on(t.clientEventId),
  // completions_follow_up_idx: built after the migrations (db/lateIndexes.ts).
]);

export const reviewResolutions = pgTable('review_resolutions', {
  id: id(),
  deliveryId: uuid('delivery_id').notNull().references(() => deliveries.id),
  processor: text('processor').notNull(),
  resolvedAt: writtenAt('resolved_at'),
}, (t) => [index('review_resolutions_delivery_idx').on(t.deliveryId)]);

// ---------- operations ----------

export const erpImportRuns = pgTable('erp_import_runs', {
  id: id(),
  targetDate: date('target_date', { mode: 'string' }).notNull(),
  trigger: text('trigger', { enum: ['scheduler', 'startup', 'manual'] }).notNull(),
  startedAt: ts('started_at').notNull().defaultNow(),
  finishedAt: ts('finished_at'),
  success: boolean('success').notNull().default(false),
  counters: jsonb('counters').$type<Record<string, number>>().notNull().default({}),
  error: text('error'),
}, (t) => [index('erp_import_runs_target_idx').on(t.targetDate)]);

/** What a recorded rejection answered: a copy of the event answers `duplicate` with it. */
export interface RecordedRejection { code: string; reason: string; message: string; errors?: { path: string; message: string }[] }

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
export const changeLog = pgTable('change_log', {
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
}, (t) => [index('change_log_account_seq_idx').on(t.accountId, t.seq)]);

export const meta = pgTable('meta', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
});
