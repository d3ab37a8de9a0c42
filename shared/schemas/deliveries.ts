import { z } from 'zod';
import { INTERNAL_NOTE_MAX, NOTE_TEXT_MAX } from '../rules/notes.js';
import { Address, ErpNumber, Timestamp, Uuid } from './common.js';
import { Article, ContactSource, Customer, Tour, Warehouse } from './tours.js';

export const DeliveryState = z.enum(['active', 'held', 'canceled', 'completed']);
export type DeliveryState = z.infer<typeof DeliveryState>;
export const ItemState = z.enum(['InProgress', 'Done', 'Removed', 'Held']);
export type ItemState = z.infer<typeof ItemState>;
export const AuditAction = z.enum(['scan', 'unscan', 'hold', 'unhold', 'remove', 'unremove']);
export type AuditAction = z.infer<typeof AuditAction>;
export const CreditAction = z.enum(['set', 'remove']);

export const Credit = z.object({ amountCents: z.number().int(), reason: z.string(), updatedAt: Timestamp }).meta({ id: 'Credit' });
export type Credit = z.infer<typeof Credit>;

export const Delivery = z
  .object({
    id: Uuid,
    tourId: Uuid,
    belegartId: z.number().int(),
    belegnummer: z.string(),
    customerId: Uuid,
    deliveryAddress: Address,
    state: DeliveryState,
    stateReason: z.string().nullable(),
    sortOrder: z.number().int(),
    paymentMethodId: Uuid.nullable(),
    paymentTerm: z.string().nullable(),
    assignedCarId: Uuid.nullable(),
    erpOpenAmountCents: z.number().int(),
    openAmountCents: z.number().int(),
    credit: Credit.nullable(),
    completedAt: Timestamp.nullable(),
    updatedAt: Timestamp,
  })
  .meta({ id: 'Delivery' });
export type Delivery = z.infer<typeof Delivery>;
export const DeliveryResponse = z.object({ delivery: Delivery }).meta({ id: 'DeliveryResponse' });

export const DeliveryItem = z
  .object({
    id: Uuid,
    deliveryId: Uuid,
    lineNumber: z.number().int(),
    articleId: Uuid,
    warehouseId: Uuid.nullable(),
    requiredQuantity: z.number().int(),
    scannedQuantity: z.number().int(),
    creditedQuantity: z.number().int(),
    state: ItemState,
    scannable: z.boolean(),
    unit: z.string().nullable(),
    unitPriceCents: z.number().int().nullable(),
  })
  .meta({ id: 'DeliveryItem' });
export type DeliveryItem = z.infer<typeof DeliveryItem>;

export const Note = z
  .object({
    id: Uuid,
    deliveryId: Uuid,
    text: z.string().nullable(),
    imageAttachment: z.string().nullable(),
    imageAttachmentId: Uuid.nullable(),
    authorCarId: Uuid.nullable(),
    creditDeliveryItemId: Uuid.nullable(),
    isAmountCreditNote: z.boolean(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Note' });
export type Note = z.infer<typeof Note>;
export const DeliveryNoteResponse = z
  .object({
    note: Note.nullable().meta({ description: 'null only for a repeated image upload (same clientEventId) whose note was deleted since' }),
  })
  .meta({ id: 'DeliveryNoteResponse' });

export const NoteContent = {
  text: z.string().max(NOTE_TEXT_MAX).nullable().optional(),
  imageAttachment: z.string().max(1000).nullable().optional(),
};
export const CreateDeliveryNoteRequest = z
  .object({
    ...NoteContent,
    authorCarId: Uuid.nullable().optional(),
    creditDeliveryItemId: Uuid.nullable().optional(),
    isAmountCreditNote: z.boolean().optional(),
  })
  .meta({ id: 'CreateDeliveryNoteRequest' });
export const UpdateDeliveryNoteRequest = z.object(NoteContent).meta({ id: 'UpdateDeliveryNoteRequest' });

export const Payment = z
  .object({
    id: Uuid,
    deliveryId: Uuid,
    paymentMethodId: Uuid,
    paymentMethodCode: z.string(),
    amountCents: z.number().int(),
    accountId: ErpNumber,
    authorCarId: Uuid.nullable(),
    occurredAt: Timestamp,
    receivedAt: Timestamp,
  })
  .meta({ id: 'Payment' });
export type Payment = z.infer<typeof Payment>;

export const ServiceValue = z
  .object({
    deliveryId: Uuid,
    serviceId: Uuid,
    boolValue: z.boolean().nullable(),
    numericValue: z.number().int().nullable(),
    updatedAt: Timestamp,
  })
  .meta({ id: 'ServiceValue' });
export type ServiceValue = z.infer<typeof ServiceValue>;

export const Attachment = z
  .object({
    id: Uuid,
    deliveryId: Uuid,
    noteId: Uuid.nullable(),
    kind: z.enum(['customer_signature', 'driver_signature', 'note_image', 'delivery_report']),
    contentType: z.string(),
    createdAt: Timestamp,
  })
  .meta({ id: 'Attachment' });
export type Attachment = z.infer<typeof Attachment>;

/** A delivery's completion as the change feed carries it. */
export const Completion = z
  .object({
    deliveryId: Uuid,
    completedAt: Timestamp,
    authorCarId: Uuid.nullable(),
    paymentMethodId: Uuid.nullable(),
    paymentId: Uuid.nullable(),
    paymentCollected: z.boolean(),
    collectedAmountCents: z.number().int(),
    notesAcknowledged: z.boolean(),
    acknowledgedNoteIds: z.array(Uuid),
    internalNote: z.string().nullable(),
    customerSignatureId: Uuid,
    driverSignatureId: Uuid,
    reportAttachmentId: Uuid.nullable(),
  })
  .meta({ id: 'Completion' });
export type Completion = z.infer<typeof Completion>;

// ---------- requests ----------

export const AssignCarRequest = z.object({ carId: Uuid.nullable() }).meta({ id: 'AssignCarRequest' });
// A blank reason breaks a rule of the operation (shared/rules/delivery.ts), not the event's shape:
// in a push it refuses that event alone, as a blank credit reason does.
const StateReason = z.string().max(2000).meta({ description: 'Not empty after trimming' });
export const HoldDeliveryRequest = z.object({ reason: StateReason }).meta({ id: 'HoldDeliveryRequest' });
export const CancelDeliveryRequest = z.object({ reason: StateReason }).meta({ id: 'CancelDeliveryRequest' });

export const DeliveryCreditEventRequest = z
  .object({
    clientEventId: Uuid,
    action: CreditAction,
    // The amount's rule is the engine's (a rejected event, not a malformed one); documented here.
    amountCents: z
      .int32()
      .optional()
      .meta({ description: 'With `set`: 1000 to 15000, a multiple of 1000 (10 to 150 euro in steps of 10)' }),
    reason: z.string().max(2000).optional().meta({ description: 'With `set`: not empty after trimming' }),
    authorCarId: Uuid.nullable().optional(),
  })
  .meta({ id: 'DeliveryCreditEventRequest' });
export const DeliveryCreditResponse = z
  .object({ credit: Credit.nullable(), openAmountCents: z.number().int() })
  .meta({ id: 'DeliveryCreditResponse' });

export const RecordDeliveryPaymentRequest = z
  .object({
    clientEventId: Uuid,
    expectedAmountCents: z.int32(),
    paymentMethodId: Uuid,
    authorCarId: Uuid.nullable().optional(),
  })
  .meta({ id: 'RecordDeliveryPaymentRequest' });
export const DeliveryPaymentResponse = z
  .object({ payment: Payment, openAmountCents: z.number().int() })
  .meta({ id: 'DeliveryPaymentResponse' });

export const SetDeliveryServiceRequest = z
  .object({
    boolValue: z.boolean().nullable().optional(),
    numericValue: z.int32().nullable().optional(),
  })
  .meta({ id: 'SetDeliveryServiceRequest' });
export const DeliveryServiceResponse = z.object({ serviceValue: ServiceValue }).meta({ id: 'DeliveryServiceResponse' });

export const ScanEvent = z
  .object({
    clientScanId: Uuid,
    deliveryItemId: Uuid,
    action: AuditAction,
    occurredAt: Timestamp,
    quantity: z.int32().min(1).optional(),
    reason: z.string().max(2000).optional(),
    authorCarId: Uuid.nullable().optional(),
  })
  .meta({ id: 'ScanEvent' });
export type ScanEvent = z.infer<typeof ScanEvent>;
export const ApplyScansRequest = z.object({ scans: z.array(ScanEvent).max(500) }).meta({ id: 'ApplyScansRequest' });

export const ScanResult = z
  .object({
    clientScanId: Uuid,
    status: z.enum(['applied', 'duplicate', 'rejected']),
    code: z.string().optional().meta({
      description:
        'With a rejection, and with the duplicate of a scan refused before: why, e.g. quantity_exceeded; other_event with a duplicate whose id stands for another event',
    }),
    reason: z.string().optional(),
    item: DeliveryItem.nullable(),
  })
  .meta({ id: 'ScanResult' });
export const ApplyScansResponse = z.object({ results: z.array(ScanResult) }).meta({ id: 'ApplyScansResponse' });

export const CompleteDeliveryAcknowledgements = z
  .object({
    receiptConfirmed: z.boolean(),
    notesAcknowledged: z.boolean().optional(),
    acknowledgedNoteIds: z.array(Uuid).max(1000).optional(),
    authorCarId: Uuid.nullable().optional(),
    internalNote: z
      .string()
      .nullable()
      .optional()
      .meta({
        description: `Trimmed; at most ${INTERNAL_NOTE_MAX} characters (counted as characters, not UTF-16 units); blank means none`,
      }),
    paymentCollected: z.boolean().optional(),
    paymentMethodId: Uuid.nullable().optional(),
    clientEventId: Uuid.optional(),
    occurredAt: Timestamp.optional().meta({
      description:
        "When the driver completed the delivery on the device, for a completion sent later from an outbox: the completion time (and the ERP's delivered-at) unless it lies in the future, before the delivery was created or more than 7 days back, where the service's own time counts",
    }),
  })
  .meta({ id: 'CompleteDeliveryAcknowledgements' });
export type CompleteDeliveryAcknowledgements = z.infer<typeof CompleteDeliveryAcknowledgements>;

// ---------- the tour aggregate ----------

export const DeliveryDetails = Delivery.extend({
  positions: z.array(DeliveryItem),
  contacts: z.array(ContactSource),
  notes: z.array(Note),
  serviceValues: z.array(ServiceValue),
  latestPayment: Payment.nullable(),
  attachments: z.array(Attachment),
  pendingOnDevice: z.object({ deviceId: Uuid, completedAt: Timestamp, reportedAt: Timestamp }).optional().meta({
    description: 'Present while a phone holds an unsent completion of it: completed at completedAt (device clock), not yet received',
  }),
}).meta({ id: 'DeliveryDetails' });
export type DeliveryDetails = z.infer<typeof DeliveryDetails>;

export const TourDetails = z
  .object({
    tour: Tour,
    deliveries: z.array(DeliveryDetails),
    customers: z.array(Customer),
    articles: z.array(Article),
    warehouses: z.array(Warehouse),
  })
  .meta({ id: 'TourDetails' });
export type TourDetails = z.infer<typeof TourDetails>;
