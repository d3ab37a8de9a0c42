import { sql } from 'drizzle-orm';
import { boolean, check, date, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import type { Address, ContactRole } from '../../../shared/schemas/common.js';
import { id, createdAt, updatedAt, ts, personalnummer, bytea } from './columns.js';
import { accounts, cars, paymentMethods, services, customers, warehouses, articles } from './masterData.js';

// ---------- tours, deliveries, positions ----------

export const tours = pgTable(
  'tours',
  {
    id: id(),
    accountId: personalnummer('account_id')
      .notNull()
      .references(() => accounts.personalnummer),
    tourDate: date('tour_date', { mode: 'string' }).notNull(),
    name: text('name'),
    /** When the driver first set the order (PUT delivery-order); from then on a re-sync keeps it. */
    orderedByDriverAt: ts('ordered_by_driver_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex('tours_account_date_uq').on(t.accountId, t.tourDate)],
);

export const deliveryStates = ['active', 'held', 'canceled', 'completed'] as const;

export const deliveries = pgTable(
  'deliveries',
  {
    id: id(),
    tourId: uuid('tour_id')
      .notNull()
      .references(() => tours.id),
    belegartId: integer('belegart_id').notNull(),
    belegnummer: text('belegnummer').notNull(),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
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
    /**
     * The four-eyes review's marker, kept in the transaction of each change: the receipt time of
     * the latest removal or its undoing and of the latest money credit action (their audit rows'
     * `received_at`), and of the latest confirmation. Pending candidates are those changed after
     * their confirmation; a partial index holds only them (db/lateIndexes.ts).
     */
    reviewChangedAt: ts('review_changed_at'),
    reviewResolvedAt: ts('review_resolved_at'),
    /**
     * Once completed, the start of its entry in the back office's completed list as JSON text (all
     * but the customer's name and the mail's time), written at completion (engine/completedEntries.ts).
     */
    completedEntryHead: text('completed_entry_head'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('deliveries_beleg_uq').on(t.belegartId, t.belegnummer),
    index('deliveries_tour_idx').on(t.tourId),
    index('deliveries_belegnummer_idx').on(t.belegnummer),
    index('deliveries_completed_idx').on(t.completedAt),
    // Who to tell of changed master data (tourSync's masterDataForOthers).
    index('deliveries_customer_idx').on(t.customerId),
    // deliveries_mail_open_idx: built after the migrations (db/lateIndexes.ts).
  ],
);

export const itemStates = ['InProgress', 'Done', 'Removed', 'Held'] as const;

export const deliveryItems = pgTable(
  'delivery_items',
  {
    id: id(),
    deliveryId: uuid('delivery_id')
      .notNull()
      .references(() => deliveries.id),
    lineNumber: integer('line_number').notNull(),
    articleId: uuid('article_id')
      .notNull()
      .references(() => articles.id),
    warehouseId: uuid('warehouse_id').references(() => warehouses.id),
    requiredQuantity: integer('required_quantity').notNull(),
    scannedQuantity: integer('scanned_quantity').notNull().default(0),
    creditedQuantity: integer('credited_quantity').notNull().default(0),
    state: text('state', { enum: itemStates }).notNull().default('InProgress'),
    unit: text('unit'),
    unitPriceCents: integer('unit_price_cents'),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('delivery_items_line_uq').on(t.deliveryId, t.lineNumber),
    index('delivery_items_article_idx').on(t.articleId),
    index('delivery_items_warehouse_idx').on(t.warehouseId),
    check('delivery_items_quantities_ck', sql`${t.scannedQuantity} >= 0 AND ${t.creditedQuantity} >= 0 AND ${t.requiredQuantity} >= 1`),
  ],
);

export const contactSources = pgTable(
  'contact_sources',
  {
    id: id(),
    deliveryId: uuid('delivery_id')
      .notNull()
      .references(() => deliveries.id),
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
  },
  (t) => [index('contact_sources_delivery_idx').on(t.deliveryId)],
);

export const contactChannels = pgTable(
  'contact_channels',
  {
    id: id(),
    sourceId: uuid('source_id')
      .notNull()
      .references(() => contactSources.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: ['phone', 'mobile', 'email', 'web'] }).notNull(),
    position: integer('position').notNull(),
    value: text('value').notNull(),
  },
  (t) => [uniqueIndex('contact_channels_uq').on(t.sourceId, t.kind, t.value)],
);

// ---------- driver work on a delivery ----------

export const notes = pgTable(
  'notes',
  {
    id: id(),
    deliveryId: uuid('delivery_id')
      .notNull()
      .references(() => deliveries.id),
    text: text('text'),
    imageAttachment: text('image_attachment'),
    authorCarId: uuid('author_car_id').references(() => cars.id),
    creditDeliveryItemId: uuid('credit_delivery_item_id').references(() => deliveryItems.id),
    isAmountCreditNote: boolean('is_amount_credit_note').notNull().default(false),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('notes_delivery_idx').on(t.deliveryId)],
);

/**
 * Append-only log of every scan action. Only the line is a foreign key: lines are the one thing
 * here that gets deleted (by the tour import, and only lines no audit row names, which the key
 * keeps true under races). Deliveries, accounts and cars are never deleted and the engine holds
 * the delivery's lock while it writes; a key check on them would cost a locking read per row,
 * most of the write's time at thousands of scans a second.
 */
export const deliveryServiceValues = pgTable(
  'delivery_service_values',
  {
    deliveryId: uuid('delivery_id')
      .notNull()
      .references(() => deliveries.id),
    serviceId: uuid('service_id')
      .notNull()
      .references(() => services.id),
    boolValue: boolean('bool_value'),
    numericValue: integer('numeric_value'),
    authorCarId: uuid('author_car_id').references(() => cars.id),
    updatedAt: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.deliveryId, t.serviceId] }), index('delivery_service_values_service_idx').on(t.serviceId)],
);

export const attachmentKinds = ['customer_signature', 'driver_signature', 'note_image', 'delivery_report'] as const;

export const attachments = pgTable(
  'attachments',
  {
    id: id(),
    deliveryId: uuid('delivery_id')
      .notNull()
      .references(() => deliveries.id),
    noteId: uuid('note_id'),
    kind: text('kind', { enum: attachmentKinds }).notNull(),
    reference: text('reference').notNull(),
    contentType: text('content_type').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    /** Hex SHA-256 of the bytes, for the delivery report (the ERP write-back names it); null for older rows and other kinds. */
    sha256: text('sha256'),
    createdAt: createdAt(),
  },
  (t) => [index('attachments_delivery_idx').on(t.deliveryId), index('attachments_reference_idx').on(t.reference)],
);

/**
 * The bytes of the attachments the service keeps itself: the signatures, which the spec has stored
 * locally, written in the transaction that completes their delivery (so a completion never fails
 * with the document store). Their attachments' reference is `~db/<attachment id>`.
 */
export const attachmentContents = pgTable('attachment_contents', {
  attachmentId: uuid('attachment_id')
    .primaryKey()
    .references(() => attachments.id),
  bytes: bytea('bytes').notNull(),
});
