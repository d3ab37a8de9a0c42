import { z } from 'zod';
import { berlinDate } from '../../../shared/rules/calendar.js';
import { IsoDate, Uuid } from '../../../shared/schemas/common.js';
import { TourDetails } from '../../../shared/schemas/deliveries.js';
import {
  SetDeliveryOrderRequest,
  SetDeliveryOrderResponse,
  SyncTourRequest,
  SyncTourResponse,
  TourSummaryList,
} from '../../../shared/schemas/tours.js';
import { setDeliveryOrder } from '../../engine/deliveryOrder.js';
import { syncTour } from '../../engine/tourSync/syncTour.js';
import { listTourSummaries } from '../../queries/tourSummaries.js';
import { route } from '../route.js';

const TourParams = z.object({ tour_id: Uuid });

export const tourRoutes = [
  route({
    method: 'post',
    path: '/sync/tour',
    auth: 'sync',
    tags: ['Tours'],
    summary: 'Create or update one day tour idempotently (the ERP import shape)',
    description:
      "A driver token sends only its own tour, with its account's name as stored and no `active: false`, and takes no " +
      "delivery of another account's tour (403, nothing changed). A token with the sync role or the admin key sends any " +
      "driver's tour, creating or changing the account (docs/authorization.md).",
    body: SyncTourRequest,
    response: SyncTourResponse,
    errors: [403],
    handler: ({ ctx, actor, body }) =>
      syncTour(
        ctx.database.db,
        body,
        actor.kind === 'driver' && !actor.syncRole ? { kind: 'driver', personalnummer: actor.personalnummer } : { kind: 'any' },
      ),
  }),
  route({
    method: 'get',
    path: '/me/tours',
    auth: 'bearer',
    tags: ['Tours'],
    summary: 'Tours of the logged-in driver for a day (default today, Europe/Berlin)',
    query: z.object({ date: IsoDate.optional() }),
    response: TourSummaryList,
    handler: async ({ ctx, actor, query }) => ({
      tours: await listTourSummaries(ctx.database.db, actor.personalnummer, query.date ?? berlinDate(ctx.clock())),
    }),
  }),
  route({
    method: 'get',
    path: '/tours/{tour_id}',
    auth: 'bearer',
    tags: ['Tours'],
    summary: 'One tour with its deliveries, positions, contacts, notes, service values, credit, latest payment and referenced master data',
    params: TourParams,
    response: TourDetails,
    errors: [404],
    conditional: true,
    handler: ({ ctx, actor, params }) => ctx.tours(ctx.database.db, params.tour_id, actor.personalnummer),
  }),
  route({
    method: 'put',
    path: '/tours/{tour_id}/delivery-order',
    auth: 'bearer',
    tags: ['Tours'],
    summary: "Set the complete order of the tour's deliveries",
    params: TourParams,
    body: SetDeliveryOrderRequest,
    response: SetDeliveryOrderResponse,
    errors: [404],
    handler: ({ ctx, actor, params, body }) => setDeliveryOrder(ctx.database.db, actor.personalnummer, params.tour_id, body.deliveryIds),
  }),
];
