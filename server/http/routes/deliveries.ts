import { newId } from '../../../shared/ids.js';
import { z } from 'zod';
import { Uuid } from '../../../shared/schemas/common.js';
import {
  ApplyScansRequest,
  ApplyScansResponse,
  AssignCarRequest,
  CancelDeliveryRequest,
  CreateDeliveryNoteRequest,
  DeliveryCreditEventRequest,
  DeliveryCreditResponse,
  DeliveryNoteResponse,
  DeliveryPaymentResponse,
  DeliveryResponse,
  DeliveryServiceResponse,
  HoldDeliveryRequest,
  RecordDeliveryPaymentRequest,
  SetDeliveryServiceRequest,
  UpdateDeliveryNoteRequest,
  type Delivery,
  type Note,
  type ServiceValue,
} from '../../../shared/schemas/deliveries.js';
import type { SyncEvent } from '../../../shared/schemas/sync.js';
import type { DriverActor, AppContext } from '../../context.js';
import { applyEvent, applyEvents } from '../../engine/apply.js';
import { scanRejectionCode } from '../../../shared/rules/eventResults.js';
import { eventWindowStart } from '../../jobs/eventRetention.js';
import { route } from '../route.js';

const DeliveryParams = z.object({ delivery_id: Uuid });
const NoteParams = z.object({ delivery_id: Uuid, note_id: Uuid });
const ServiceParams = z.object({ delivery_id: Uuid, service_id: Uuid });

type EventBody = SyncEvent extends infer E ? (E extends SyncEvent ? Omit<E, 'eventId' | 'occurredAt'> : never) : never;

/** A REST mutation is one event through the engine; its rejection becomes the HTTP error. */
function apply(ctx: AppContext, actor: DriverActor, event: EventBody, eventId: string = newId()) {
  return applyEvent(ctx.database.db, actor, { ...event, eventId, occurredAt: new Date().toISOString() } as SyncEvent, {
    ...ctx.metrics.engine,
  });
}

const deliveryRoute = (path: string, summary: string) => ({
  path: `/deliveries/{delivery_id}${path}`,
  auth: 'bearer' as const,
  tags: ['Deliveries'],
  summary,
  params: DeliveryParams,
  errors: [404],
});

export const deliveryRoutes = [
  route({
    method: 'post',
    path: '/scans',
    auth: 'bearer',
    // The push of app versions before the outbox: as frequent as a push.
    direct: true,
    tags: ['Scans'],
    summary: 'Apply scan events in bulk; one result per event in request order',
    body: ApplyScansRequest,
    response: ApplyScansResponse,
    handler: async ({ ctx, actor, body }) => {
      const events = body.scans.map(({ clientScanId, ...scan }): SyncEvent => ({ ...scan, type: 'scan', eventId: clientScanId }));
      const results = await applyEvents(ctx.database.db, actor, events, {
        acceptedSince: eventWindowStart(ctx.config.processedEventRetentionDays),
        ...ctx.metrics.engine,
      });
      return {
        results: results.map((r) => ({
          clientScanId: r.eventId,
          status: r.status,
          // Why it was refused, or that its id stands for another event.
          ...(r.reason !== undefined && { code: scanRejectionCode(r), reason: r.message }),
          item: (r.entity as z.infer<typeof ApplyScansResponse>['results'][number]['item']) ?? null,
        })),
      };
    },
  }),
  route({
    method: 'put',
    ...deliveryRoute('/assigned-car', 'Assign a car of the account to the delivery (null clears it)'),
    body: AssignCarRequest,
    response: DeliveryResponse,
    handler: async ({ ctx, actor, params, body }) => ({
      delivery: (await apply(ctx, actor, { type: 'delivery.assignCar', deliveryId: params.delivery_id, carId: body.carId })) as Delivery,
    }),
  }),
  route({
    method: 'post',
    ...deliveryRoute('/hold', 'Hold an active delivery with a reason'),
    body: HoldDeliveryRequest,
    response: DeliveryResponse,
    handler: async ({ ctx, actor, params, body }) => ({
      delivery: (await apply(ctx, actor, { type: 'delivery.hold', deliveryId: params.delivery_id, reason: body.reason })) as Delivery,
    }),
  }),
  route({
    method: 'post',
    ...deliveryRoute('/resume', 'Resume a held delivery'),
    response: DeliveryResponse,
    handler: async ({ ctx, actor, params }) => ({
      delivery: (await apply(ctx, actor, { type: 'delivery.resume', deliveryId: params.delivery_id })) as Delivery,
    }),
  }),
  route({
    method: 'post',
    ...deliveryRoute('/cancel', 'Cancel an active or held delivery with a reason (final)'),
    body: CancelDeliveryRequest,
    response: DeliveryResponse,
    handler: async ({ ctx, actor, params, body }) => ({
      delivery: (await apply(ctx, actor, { type: 'delivery.cancel', deliveryId: params.delivery_id, reason: body.reason })) as Delivery,
    }),
  }),
  route({
    method: 'post',
    ...deliveryRoute('/credit', 'Set or remove the money credit (10 to 150 euro in steps of 10), idempotent by clientEventId'),
    body: DeliveryCreditEventRequest,
    response: DeliveryCreditResponse,
    handler: async ({ ctx, actor, params, body: { clientEventId, ...credit } }) =>
      apply(ctx, actor, { type: 'credit', deliveryId: params.delivery_id, ...credit }, clientEventId),
  }),
  route({
    method: 'post',
    ...deliveryRoute('/payment', 'Log a payment of exactly the open amount, idempotent by clientEventId'),
    body: RecordDeliveryPaymentRequest,
    response: DeliveryPaymentResponse,
    handler: async ({ ctx, actor, params, body: { clientEventId, ...payment } }) =>
      apply(ctx, actor, { type: 'payment', deliveryId: params.delivery_id, ...payment }, clientEventId),
  }),
  route({
    method: 'post',
    ...deliveryRoute('/notes', 'Create a note (text and/or image reference)'),
    body: CreateDeliveryNoteRequest,
    response: DeliveryNoteResponse,
    handler: async ({ ctx, actor, params, body }) => ({
      note: (await apply(ctx, actor, { type: 'note.create', deliveryId: params.delivery_id, noteId: newId(), ...body })) as Note,
    }),
  }),
  route({
    method: 'patch',
    path: '/deliveries/{delivery_id}/notes/{note_id}',
    auth: 'bearer',
    tags: ['Notes'],
    summary: 'Change text and/or image of a note',
    params: NoteParams,
    body: UpdateDeliveryNoteRequest,
    response: DeliveryNoteResponse,
    errors: [404],
    // The spec addresses the note by its id alone; the path's delivery is not checked.
    handler: async ({ ctx, actor, params, body }) => ({
      note: (await apply(ctx, actor, { type: 'note.update', noteId: params.note_id, ...body })) as Note,
    }),
  }),
  route({
    method: 'delete',
    path: '/deliveries/{delivery_id}/notes/{note_id}',
    auth: 'bearer',
    tags: ['Notes'],
    summary: 'Delete a note',
    params: NoteParams,
    status: 204,
    errors: [404],
    handler: ({ ctx, actor, params }) => apply(ctx, actor, { type: 'note.delete', deliveryId: params.delivery_id, noteId: params.note_id }),
  }),
  route({
    method: 'put',
    path: '/deliveries/{delivery_id}/services/{service_id}',
    auth: 'bearer',
    tags: ['Services'],
    summary: 'Set a service value (exactly the field of its kind)',
    params: ServiceParams,
    body: SetDeliveryServiceRequest,
    response: DeliveryServiceResponse,
    errors: [404],
    handler: async ({ ctx, actor, params, body }) => ({
      serviceValue: (await apply(ctx, actor, {
        type: 'service.set',
        deliveryId: params.delivery_id,
        serviceId: params.service_id,
        ...body,
      })) as ServiceValue,
    }),
  }),
  route({
    method: 'delete',
    path: '/deliveries/{delivery_id}/services/{service_id}',
    auth: 'bearer',
    tags: ['Services'],
    summary: 'Clear a service value',
    params: ServiceParams,
    status: 204,
    errors: [404],
    handler: ({ ctx, actor, params }) =>
      apply(ctx, actor, { type: 'service.clear', deliveryId: params.delivery_id, serviceId: params.service_id }),
  }),
];
