import { z } from 'zod';
import { Problem, queryInt, Timestamp, Uuid } from './common.js';
import {
  AssignCarRequest,
  Attachment,
  CancelDeliveryRequest,
  Completion,
  CreateDeliveryNoteRequest,
  Delivery,
  DeliveryCreditEventRequest,
  DeliveryCreditResponse,
  DeliveryItem,
  DeliveryPaymentResponse,
  HoldDeliveryRequest,
  Note,
  Payment,
  RecordDeliveryPaymentRequest,
  ScanEvent,
  ServiceValue,
  SetDeliveryServiceRequest,
  UpdateDeliveryNoteRequest,
} from './deliveries.js';
import { DeviceReportAnswer } from './devices.js';
import { Car, PaymentMethod, Service } from './masterData.js';
import { Article, ContactSource, Customer, Tour, Warehouse } from './tours.js';

const base = { eventId: Uuid, occurredAt: Timestamp };
const onDelivery = { ...base, deliveryId: Uuid };

/** Every change a driver makes, as the outbox pushes it and as REST calls are applied. */
export const SyncEvent = z
  .discriminatedUnion('type', [
    z.object({ ...base, type: z.literal('scan'), ...ScanEvent.omit({ clientScanId: true, occurredAt: true }).shape }),
    z.object({ ...onDelivery, type: z.literal('delivery.hold'), ...HoldDeliveryRequest.shape }),
    z.object({ ...onDelivery, type: z.literal('delivery.resume') }),
    z.object({ ...onDelivery, type: z.literal('delivery.cancel'), ...CancelDeliveryRequest.shape }),
    z.object({ ...onDelivery, type: z.literal('delivery.assignCar'), ...AssignCarRequest.shape }),
    z.object({ ...onDelivery, type: z.literal('credit'), ...DeliveryCreditEventRequest.omit({ clientEventId: true }).shape }),
    z.object({ ...onDelivery, type: z.literal('payment'), ...RecordDeliveryPaymentRequest.omit({ clientEventId: true }).shape }),
    z.object({ ...onDelivery, type: z.literal('note.create'), noteId: Uuid, ...CreateDeliveryNoteRequest.shape }),
    z.object({ ...base, deliveryId: Uuid.optional(), type: z.literal('note.update'), noteId: Uuid, ...UpdateDeliveryNoteRequest.shape }),
    z.object({ ...base, deliveryId: Uuid.optional(), type: z.literal('note.delete'), noteId: Uuid }),
    z.object({ ...onDelivery, type: z.literal('service.set'), serviceId: Uuid, ...SetDeliveryServiceRequest.shape }),
    z.object({ ...onDelivery, type: z.literal('service.clear'), serviceId: Uuid }),
  ])
  .meta({ id: 'SyncEvent' });
export type SyncEvent = z.infer<typeof SyncEvent>;
export type SyncEventType = SyncEvent['type'];
export type SyncEventOf<T extends SyncEventType> = Extract<SyncEvent, { type: T }>;

export const EventStatus = z.enum(['applied', 'duplicate', 'rejected']);
export const EventResult = z
  .object({
    eventId: Uuid,
    status: EventStatus,
    code: z.string().optional().meta({
      description:
        'With a rejection, and with the duplicate of a refused event (an id refused before answers duplicate with that refusal): the error code; for a scan the scan rejection code (not_found, delivery_not_active, quantity_exceeded, nothing_to_unscan, item_removed, not_scannable, invalid_action, ...)',
    }),
    reason: z.string().optional().meta({
      description:
        'With a rejection, and with the duplicate of a refused event: the rule that refused it, e.g. quantity_exceeded or delivery_not_active; with any other duplicate: other_event when the id stands for another event than the copy describes',
    }),
    message: z.string().optional(),
    errors: Problem.shape.errors.meta({
      description: 'With a rejection for a field of the event, and with the duplicate of such a refused event: which field, and why',
    }),
    entity: z
      .union([DeliveryItem, DeliveryCreditResponse, DeliveryPaymentResponse, Note, ServiceValue, Delivery])
      .nullable()
      .optional()
      .meta({
        description:
          "With an applied or duplicate event: what the event touched, as it is now, by the event's type: scan → DeliveryItem; " +
          'credit → DeliveryCreditResponse; payment → DeliveryPaymentResponse; note.create, note.update, note.delete → Note (null once ' +
          'deleted); service.set, service.clear → ServiceValue (null once cleared); delivery.hold, delivery.resume, delivery.cancel, ' +
          'delivery.assignCar → Delivery',
      }),
    seq: z.number().int().optional().meta({
      format: 'int64',
      description:
        "With an applied event: the change-feed seq up to which the sender's feed carries it. A client that has received the changes up to this seq holds a state that contains the event, so it stops adding the event on top of it.",
    }),
  })
  .meta({ id: 'EventResult' });
export type EventResult = z.infer<typeof EventResult>;
/** What an applied event touched, as its result's `entity`. */
export type EventEntity = NonNullable<EventResult['entity']>;

export const PushRequest = z
  .object({
    clientId: z.string().trim().min(1).max(200),
    events: z.array(SyncEvent).min(1).max(500),
    device: z.unknown().optional().meta({
      description:
        "The device's health report (DeviceReport), checked on its own: a bad one is answered in the response's `device` and refuses nothing else",
    }),
  })
  .meta({ id: 'PushRequest' });
export const PushResponse = z
  .object({
    results: z.array(EventResult),
    device: DeviceReportAnswer.optional().meta({ description: 'Whether the device report sent along was kept; absent when none was' }),
  })
  .meta({ id: 'PushResponse' });

/** Every kind of record the change feed carries; `Change.data` is the record's public shape. */
export const ChangeEntity = z
  .enum([
    'tour',
    'warehouse',
    'article',
    'customer',
    'delivery',
    'position',
    'contact',
    'note',
    'serviceValue',
    'attachment',
    'payment',
    'completion',
    'car',
    'paymentMethod',
    'service',
  ])
  .meta({ id: 'ChangeEntity' });
export type ChangeEntity = z.infer<typeof ChangeEntity>;

/** The public shape of each entity, as `data` of its upserts. */
export const changeData = {
  tour: Tour,
  warehouse: Warehouse,
  article: Article,
  customer: Customer,
  delivery: Delivery,
  position: DeliveryItem,
  contact: ContactSource,
  note: Note,
  serviceValue: ServiceValue,
  attachment: Attachment,
  payment: Payment,
  completion: Completion,
  car: Car,
  paymentMethod: PaymentMethod,
  service: Service,
} satisfies Record<ChangeEntity, z.ZodType>;
export type ChangeData = { [E in ChangeEntity]: z.infer<(typeof changeData)[E]> };

const ChangeEventIds = z.array(Uuid).optional().meta({
  description:
    "On the last change a write made for the account: the ids of the account's events (push events, a completion's clientEventId) that the write applied. A client that has applied the changes up to this one holds their effects, so it settles its own entries with these ids and stops adding them on top, even when the push answer was lost. Absent on every other change; clients that ignore it keep working.",
});

const changeName = (entity: ChangeEntity) => `${entity[0].toUpperCase()}${entity.slice(1)}Change`;

function changeOf<E extends ChangeEntity>(entity: E) {
  return z
    .object({
      seq: z.number().int().meta({ format: 'int64' }),
      entity: z.literal(entity),
      op: z.enum(['upsert', 'delete']),
      id: z.string(),
      tourId: Uuid.optional(),
      data: changeData[entity].optional().meta({ description: 'With an upsert: the record as it is now; absent with a delete' }),
      eventIds: ChangeEventIds,
    })
    .meta({ id: changeName(entity) });
}

export const Change = z
  .discriminatedUnion('entity', [
    changeOf('tour'),
    changeOf('warehouse'),
    changeOf('article'),
    changeOf('customer'),
    changeOf('delivery'),
    changeOf('position'),
    changeOf('contact'),
    changeOf('note'),
    changeOf('serviceValue'),
    changeOf('attachment'),
    changeOf('payment'),
    changeOf('completion'),
    changeOf('car'),
    changeOf('paymentMethod'),
    changeOf('service'),
  ])
  .meta({
    id: 'Change',
    discriminator: {
      propertyName: 'entity',
      mapping: Object.fromEntries(ChangeEntity.options.map((e) => [e, `#/components/schemas/${changeName(e)}`])),
    },
  });
export type Change = z.infer<typeof Change>;

export const ChangesQuery = z.object({
  since: z.string().optional(),
  limit: queryInt(500, 1, 1000, 'Most changes in one answer'),
});
export const ChangesResponse = z
  .object({ changes: z.array(Change), cursor: z.string(), hasMore: z.boolean() })
  .meta({ id: 'ChangesResponse' });
export const SyncCursorResponse = z.object({ cursor: z.string() }).meta({ id: 'SyncCursorResponse' });

export const WsClientMessage = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('resume'), cursor: z.string().nullable().optional() }),
    z.object({ type: z.literal('ping') }),
    z.object({
      type: z.literal('device'),
      report: z.unknown().meta({ description: 'A DeviceReport; answered with a `device` message, never with an error' }),
    }),
  ])
  .meta({ id: 'WsClientMessage' });
export const WsServerMessage = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('changes'), changes: z.array(Change), cursor: z.string() }),
    z.object({ type: z.literal('error'), code: z.string(), message: z.string(), errors: Problem.shape.errors }),
    z.object({ type: z.literal('pong') }),
    z.object({ type: z.literal('device'), ...DeviceReportAnswer.shape }),
  ])
  .meta({ id: 'WsServerMessage' });
export type WsServerMessage = z.infer<typeof WsServerMessage>;
