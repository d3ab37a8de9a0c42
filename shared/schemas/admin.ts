import { z } from 'zod';
import { ContactKind, ContactRole, ErpNumber, IsoDate, isRealDate, Timestamp, Uuid } from './common.js';
import { DeliveryState, ItemState } from './deliveries.js';
import { AdminCancellation, AdminErpPush } from './erpPush.js';

/** Back-office shapes: every `/admin/...` response is snake_case throughout. */

// ---------- query parameters ----------

const dayToIso = (day: string) => `${day.slice(6, 10)}-${day.slice(3, 5)}-${day.slice(0, 2)}`;

/** A real calendar day written `DD-MM-YYYY`, handed on as ISO `YYYY-MM-DD`. */
export const AdminDay = z
  .string()
  .regex(/^\d{2}-\d{2}-\d{4}$/, 'expected DD-MM-YYYY')
  .refine((day) => isRealDate(dayToIso(day)), 'not a calendar date')
  .transform(dayToIso);

/** The most entries one page of an admin list holds, and how many it holds when only a cursor is sent. */
export const PAGE_LIMIT_MAX = 1000;
export const PAGE_LIMIT_DEFAULT = 100;

/**
 * Optional paging of an admin list. Without either parameter the list is answered whole, as
 * the spec has it; with one, a page, and the `Link` header (rel="next") names the next.
 */
export const PageFields = {
  limit: z
    .string()
    .regex(/^[0-9]{1,9}$/, 'expected a whole number')
    .transform(Number)
    .pipe(z.number().int().min(1).max(PAGE_LIMIT_MAX))
    .optional()
    .meta({
      description: `Answer one page of at most this many entries (1–${PAGE_LIMIT_MAX}; ${PAGE_LIMIT_DEFAULT} when only cursor is sent)`,
    }),
  cursor: z
    .string()
    .min(1)
    .max(1000)
    .optional()
    .meta({ description: 'Opaque: where the next page starts, as the Link header (rel="next") of the page before names it' }),
};

export const CompletedDeliveriesQuery = z
  .object({
    day: AdminDay.optional(),
    from: AdminDay.optional(),
    to: AdminDay.optional(),
    ...PageFields,
  })
  .superRefine((query, ctx) => {
    if (query.day !== undefined && (query.from !== undefined || query.to !== undefined)) {
      ctx.addIssue({ code: 'custom', path: ['day'], message: 'day cannot be combined with from or to' });
    }
  });

export const DeliveredBelegnummernQuery = z.object({ day: AdminDay.optional(), ...PageFields });
export const PendingReviewsQuery = z.object(PageFields);

// ---------- value objects ----------

const Int = z.number().int();
const IsoDay = IsoDate.meta({ description: 'ISO date YYYY-MM-DD' });

export const AdminAddress = z
  .object({
    street: z.string(),
    house_number: z.string(),
    postal_code: z.string(),
    city: z.string(),
    country: z.string(),
    addition: z.string().nullable(),
  })
  .meta({ id: 'AdminAddress' });

export const AdminCredit = z.object({ amount_cents: Int, reason: z.string(), updated_at: Timestamp }).meta({ id: 'AdminCredit' });

const CarRef = { car_id: Uuid.nullable(), car_plate: z.string().nullable() };

// ---------- document details ----------

export const AdminPosition = z
  .object({
    id: Uuid,
    delivery_id: Uuid,
    line_number: Int,
    article_id: Uuid,
    warehouse_id: Uuid.nullable(),
    required_quantity: Int,
    scanned_quantity: Int,
    credited_quantity: Int,
    state: ItemState,
    scannable: z.boolean(),
    unit: z.string().nullable(),
    unit_price_cents: Int.nullable(),
    modified: z.boolean().meta({ description: 'Removed or reduced by credited pieces' }),
  })
  .meta({ id: 'AdminPosition' });

export const AdminContactChannel = z
  .object({
    id: Uuid,
    source_id: Uuid,
    kind: ContactKind,
    position: Int,
    value: z.string(),
  })
  .meta({ id: 'AdminContactChannel' });

export const AdminContact = z
  .object({
    id: Uuid,
    delivery_id: Uuid,
    role: ContactRole,
    roles: z.array(ContactRole),
    position: Int,
    anrede: z.string().nullable(),
    titel: z.string().nullable(),
    name1: z.string().nullable(),
    name2: z.string().nullable(),
    name3: z.string().nullable(),
    abteilung: z.string().nullable(),
    funktion: z.string().nullable(),
    address: AdminAddress.nullable(),
    channels: z.array(AdminContactChannel),
  })
  .meta({ id: 'AdminContact' });

export const AdminCustomer = z
  .object({ id: Uuid, erp_customer_id: ErpNumber, name: z.string(), address: AdminAddress })
  .meta({ id: 'AdminCustomer' });
export const AdminArticle = z
  .object({
    id: Uuid,
    article_number: z.string(),
    name: z.string(),
    scannable: z.boolean(),
    default_warehouse_id: Uuid.nullable(),
  })
  .meta({ id: 'AdminArticle' });
export const AdminWarehouse = z.object({ id: Uuid, code: z.string(), name: z.string() }).meta({ id: 'AdminWarehouse' });

export const AdminNote = z
  .object({
    id: Uuid,
    delivery_id: Uuid,
    text: z.string().nullable(),
    image_attachment: z.string().nullable(),
    image_attachment_id: Uuid.nullable(),
    author_car_id: Uuid.nullable(),
    credit_delivery_item_id: Uuid.nullable(),
    is_amount_credit_note: z.boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'AdminNote' });

export const AdminServiceValue = z
  .object({
    delivery_id: Uuid,
    service_id: Uuid,
    service_key: z.string(),
    service_name: z.string(),
    service_kind: z.enum(['boolean', 'numeric']),
    bool_value: z.boolean().nullable(),
    numeric_value: Int.nullable(),
    updated_at: Timestamp,
  })
  .meta({ id: 'AdminServiceValue' });

export const AdminPayment = z
  .object({
    id: Uuid,
    delivery_id: Uuid,
    payment_method_id: Uuid,
    payment_method_code: z.string(),
    amount_cents: Int,
    account_id: ErpNumber,
    author_car_id: Uuid.nullable(),
    occurred_at: Timestamp,
    received_at: Timestamp,
  })
  .meta({ id: 'AdminPayment' });

export const AdminAttachment = z
  .object({
    id: Uuid,
    delivery_id: Uuid,
    note_id: Uuid.nullable(),
    kind: z.enum(['customer_signature', 'driver_signature', 'note_image', 'delivery_report']),
    content_type: z.string(),
    created_at: Timestamp,
  })
  .meta({ id: 'AdminAttachment' });

export const AdminCompletion = z
  .object({
    completed_at: Timestamp,
    account_id: ErpNumber,
    author_car_id: Uuid.nullable(),
    payment_method_id: Uuid.nullable(),
    payment_id: Uuid.nullable(),
    payment_collected: z.boolean(),
    collected_amount_cents: Int,
    notes_acknowledged: z.boolean(),
    acknowledged_note_ids: z.array(Uuid),
    internal_note: z.string().nullable(),
    customer_signature_id: Uuid,
    driver_signature_id: Uuid,
    report_attachment_id: Uuid.nullable(),
    erp_push: AdminErpPush,
  })
  .meta({ id: 'AdminCompletion' });

export const AdminResolution = z.object({ processor: z.string(), resolved_at: Timestamp }).meta({ id: 'AdminResolution' });

export const AdminReviewStatus = z
  .object({
    pending: z.boolean(),
    last_change_at: Timestamp.nullable(),
    last_resolution: AdminResolution.nullable(),
  })
  .meta({ id: 'AdminReviewStatus' });

export const AdminDeliveryDetails = z
  .object({
    id: Uuid,
    tour_id: Uuid,
    tour: z.object({ id: Uuid, tour_date: IsoDay, name: z.string().nullable(), driver_personalnummer: ErpNumber, driver_name: z.string() }),
    belegart_id: Int,
    belegnummer: z.string(),
    customer_id: Uuid,
    delivery_address: AdminAddress,
    state: DeliveryState,
    state_reason: z.string().nullable(),
    sort_order: Int,
    payment_method_id: Uuid.nullable(),
    payment_term: z.string().nullable(),
    assigned_car_id: Uuid.nullable(),
    erp_open_amount_cents: Int,
    open_amount_cents: Int,
    credit: AdminCredit.nullable(),
    completed_at: Timestamp.nullable(),
    mail_sent_at: Timestamp.nullable(),
    updated_at: Timestamp,
    positions_modified: z.boolean(),
    review: AdminReviewStatus,
    customer: AdminCustomer,
    contact_person: AdminContact.nullable(),
    contacts: z.array(AdminContact),
    positions: z.array(AdminPosition),
    articles: z.array(AdminArticle),
    warehouses: z.array(AdminWarehouse),
    notes: z.array(AdminNote),
    service_values: z.array(AdminServiceValue),
    latest_payment: AdminPayment.nullable(),
    completion: AdminCompletion.nullable(),
    cancellation: AdminCancellation.nullable().describe("A driver's cancellation; null for any other delivery, one the ERP withdrew too"),
    attachments: z.array(AdminAttachment),
    pending_on_device: z
      .object({ device_id: Uuid, completed_at: Timestamp, reported_at: Timestamp })
      .nullable()
      .meta({ description: 'A phone holds an unsent completion of it: which, completed when (device clock), as reported when' }),
  })
  .meta({ id: 'AdminDeliveryDetails' });
export type AdminDeliveryDetails = z.infer<typeof AdminDeliveryDetails>;

export const DeliveryDetailsResponse = z
  .object({
    belegnummer: z.string(),
    deliveries: z
      .array(AdminDeliveryDetails)
      .meta({ description: 'Every delivery with this number (one per belegart), newest tour first' }),
  })
  .meta({ id: 'DeliveryDetailsResponse' });
export type DeliveryDetailsResponse = z.infer<typeof DeliveryDetailsResponse>;

export const PositionsModifiedResponse = z
  .object({
    belegnummer: z.string(),
    positions_modified: z.boolean(),
  })
  .meta({ id: 'PositionsModifiedResponse' });

// ---------- completed deliveries and mail bookkeeping ----------

export const CompletedDeliveryItem = z
  .object({
    belegnummer: z.string(),
    positions_modified: z.boolean(),
    delivery_id: Uuid,
    belegart_id: Int,
    completed_at: Timestamp,
    completed_day: IsoDay.meta({ description: 'Berlin calendar day of completed_at' }),
    tour_date: IsoDay,
    driver_personalnummer: ErpNumber,
    customer_name: z.string(),
    mail_sent_at: Timestamp.nullable(),
  })
  .meta({ id: 'CompletedDeliveryItem' });
export type CompletedDeliveryItem = z.infer<typeof CompletedDeliveryItem>;

export const CompletedDeliveriesResponse = z
  .object({
    count: Int.min(0),
    deliveries: z.array(CompletedDeliveryItem),
    from: IsoDay.nullable(),
    to: IsoDay.nullable(),
  })
  .meta({ id: 'CompletedDeliveriesResponse' });

export const DeliveredBelegnummernResponse = z
  .object({
    belegnummern: z.array(z.string()).meta({ description: 'Distinct, by earliest completion time' }),
    count: Int.min(0),
    day: IsoDay.nullable(),
  })
  .meta({ id: 'DeliveredBelegnummernResponse' });

export const MarkMailSentRequest = z
  .object({
    // Any text: a number that no delivery has is answered as unknown, however it looks.
    belegnummern: z.array(z.string().trim().min(1)).max(1000),
  })
  .meta({ id: 'MarkMailSentRequest' });

export const MarkMailSentResponse = z
  .object({
    marked: z.array(z.string()).meta({ description: 'Numbers whose mail-sent time was set now' }),
    already_sent: z.array(z.string()).meta({ description: 'Completed, but every completed delivery was marked before' }),
    not_completed: z.array(z.string()).meta({ description: 'Known, but no delivery with this number is completed' }),
    unknown: z.array(z.string()).meta({ description: 'No delivery has this number' }),
  })
  .meta({ id: 'MarkMailSentResponse' });
export type MarkMailSentResponse = z.infer<typeof MarkMailSentResponse>;

// ---------- four-eyes review ----------

export const reviewChangeKinds = ['line_removed', 'pieces_credited', 'line_restored', 'money_credit_set', 'money_credit_removed'] as const;

export const ReviewChange = z
  .object({
    kind: z.enum(reviewChangeKinds),
    at: Timestamp.meta({ description: 'When the server received the change' }),
    occurred_at: Timestamp.meta({ description: 'When it happened on the device' }),
    delivery_item_id: Uuid.nullable(),
    line_number: Int.nullable(),
    article_number: z.string().nullable(),
    article_name: z.string().nullable(),
    quantity: Int.nullable().meta({ description: 'Pieces removed, credited or restored' }),
    amount_cents: Int.nullable().meta({ description: 'Money credit set or removed' }),
    account_id: ErpNumber,
    ...CarRef,
    reason: z.string().nullable(),
    reason_note: z.object({ id: Uuid, text: z.string().nullable(), image_attachment: z.string().nullable() }).nullable(),
    after_last_resolution: z.boolean(),
  })
  .meta({ id: 'ReviewChange' });
export type ReviewChange = z.infer<typeof ReviewChange>;

export const PendingReviewResponse = z
  .object({
    delivery_id: Uuid,
    belegnummer: z.string(),
    belegart_id: Int,
    tour_id: Uuid,
    tour_date: IsoDay,
    driver: z.object({ personalnummer: ErpNumber, name: z.string() }),
    customer: z.object({ id: Uuid, erp_customer_id: ErpNumber, name: z.string() }),
    state: DeliveryState,
    completed_at: Timestamp.nullable(),
    deviation: z.object({ removed_lines: Int, credited_lines: Int, credited_pieces: Int, money_credit_cents: Int.nullable() }),
    modified_positions: z.array(
      z.object({
        id: Uuid,
        line_number: Int,
        article_number: z.string(),
        article_name: z.string(),
        state: ItemState,
        required_quantity: Int,
        scanned_quantity: Int,
        credited_quantity: Int,
      }),
    ),
    last_change_at: Timestamp.nullable(),
    last_resolution: AdminResolution.nullable(),
    changes: z.array(ReviewChange),
  })
  .meta({ id: 'PendingReviewResponse' });
export type PendingReviewResponse = z.infer<typeof PendingReviewResponse>;
export const PendingReviewList = z.array(PendingReviewResponse).meta({ id: 'PendingReviewList' });
