import { z } from 'zod';
import { berlinDate } from '../../../shared/rules/calendar.js';
import { IsoDate, Uuid } from '../../../shared/schemas/common.js';
import { TourDetails } from '../../../shared/schemas/deliveries.js';
import {
  SetDeliveryOrderRequest, SetDeliveryOrderResponse, SyncTourRequest, SyncTourResponse, TourSummaryList,
} from '../../../shared/schemas/tours.js';
import { setDeliveryOrder } from '../../engine/deliveryOrder.js';
import { syncTour } from '../../engine/tourSync.js';
import { listTourSummaries } from '../../queries/tourSummaries.js';
import { route } from '../route.js';

const TourParams = z.object({ tour_id: Uuid });

/**
 * Whether If-None-Match names `etag`. Checked here rather than left to express, which answers in
 * full whenever the request also says `Cache-Control: no-cache`, as fetch does with every
 * If-None-Match.
 */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  return !!ifNoneMatch && ifNoneMatch.split(',').some((tag) => [etag, `W/${etag}`, '*'].includes(tag.trim()));
}

export const tourRoutes = [
  route({
    method: 'post', path: '/sync/tour', auth: 'bearer', tags: ['Tours'],
    summary: 'Create or update one day tour idempotently (the ERP import shape); any authenticated account may send any driver\'s tour',
    body: SyncTourRequest, response: SyncTourResponse,
    handler: ({ ctx, body }) => syncTour(ctx.database.db, body),
  }),
  route({
    method: 'get', path: '/me/tours', auth: 'bearer', tags: ['Tours'], summary: 'Tours of the logged-in driver for a day (default today, Europe/Berlin)',
    query: z.object({ date: IsoDate.optional() }), response: TourSummaryList,
    handler: async ({ ctx, actor, query }) => ({
      tours: await listTourSummaries(ctx.database.db, actor.personalnummer, query.date ?? berlinDate(new Date())),
    }),
  }),
  route({
    method: 'get', path: '/tours/{tour_id}', auth: 'bearer', tags: ['Tours'],
    summary: 'One tour with its deliveries, positions, contacts, notes, service values, credit, latest payment and referenced master data',
    params: TourParams, response: TourDetails, errors: [404],
    handler: async ({ ctx, actor, params, req, res }) => {
      const tour = await ctx.tours(ctx.database.db, params.tour_id, actor.personalnummer);
      const etag = `"${tour.version}"`;
      res.set('ETag', etag);
      if (matches(req.header('if-none-match'), etag)) res.status(304).end();
      else res.type('json').send(tour.body);
    },
  }),
  route({
    method: 'put', path: '/tours/{tour_id}/delivery-order', auth: 'bearer', tags: ['Tours'],
    summary: 'Set the complete order of the tour\'s deliveries',
    params: TourParams, body: SetDeliveryOrderRequest, response: SetDeliveryOrderResponse, errors: [404],
    handler: ({ ctx, actor, params, body }) => setDeliveryOrder(ctx.database.db, actor.personalnummer, params.tour_id, body.deliveryIds),
  }),
];
