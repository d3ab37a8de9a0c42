import { z } from 'zod';
import {
  CompletedDeliveriesQuery, CompletedDeliveriesResponse, DeliveredBelegnummernQuery, DeliveredBelegnummernResponse,
  DeliveryDetailsResponse, MarkMailSentRequest, MarkMailSentResponse, PendingReviewList, PositionsModifiedResponse,
  ResolveReviewRequest,
} from '../../../shared/schemas/admin.js';
import { Uuid } from '../../../shared/schemas/common.js';
import { markMailSent, resolveReview } from '../../engine/backOffice.js';
import { belegDetails, positionsModified } from '../../queries/adminBelege.js';
import { deliveredBelegnummern, streamCompletedDeliveries } from '../../queries/adminDeliveries.js';
import { pendingReviews } from '../../queries/adminReviews.js';
import { jsonArrayStream } from '../jsonStream.js';
import { route } from '../route.js';

const tags = ['Back office'];
// Any number that is not stored is simply unknown (404), however it looks.
const BelegParam = z.object({ belegnummer: z.string().min(1) });

export const adminRoutes = [
  route({
    method: 'get', path: '/admin/belege/{belegnummer}', auth: 'admin', tags,
    summary: 'Everything about the deliveries with this document number, in any state, newest tour first',
    params: BelegParam, response: DeliveryDetailsResponse, errors: [404],
    handler: ({ ctx, params }) => belegDetails(ctx.database.db, params.belegnummer),
  }),
  route({
    method: 'get', path: '/admin/belege/{belegnummer}/positions-modified', auth: 'admin', tags,
    summary: 'Whether a line was removed or reduced, or a money credit is active, on any delivery with this number',
    params: BelegParam, response: PositionsModifiedResponse, errors: [404],
    handler: async ({ ctx, params }) => ({
      belegnummer: params.belegnummer,
      positions_modified: await positionsModified(ctx.database.db, params.belegnummer),
    }),
  }),
  route({
    method: 'get', path: '/admin/completed-deliveries', auth: 'admin', tags,
    summary: 'Completed deliveries by Berlin day of completion (DD-MM-YYYY; day, or inclusive from/to), oldest completion first',
    query: CompletedDeliveriesQuery, response: CompletedDeliveriesResponse,
    // Streamed: without bounds it is every completion ever. The same bytes as `{ count, deliveries, from, to }` whole.
    handler: async ({ ctx, query, res }) => {
      const range = query.day ? { from: query.day, to: query.day } : { from: query.from ?? null, to: query.to ?? null };
      const out = jsonArrayStream(res);
      await streamCompletedDeliveries(ctx.database.db, range, {
        count: (total) => out.open(`${JSON.stringify({ count: total }).slice(0, -1)},"deliveries":`),
        page: (entries) => out.items(entries),
      });
      await out.close(`,${JSON.stringify(range).slice(1)}`);
    },
  }),
  route({
    method: 'get', path: '/admin/delivered-belegnummern', auth: 'admin', tags,
    summary: 'Numbers of completed deliveries whose mail is not sent yet, optionally of one Berlin day (DD-MM-YYYY)',
    query: DeliveredBelegnummernQuery, response: DeliveredBelegnummernResponse,
    handler: async ({ ctx, query }) => {
      const belegnummern = await deliveredBelegnummern(ctx.database.db, query.day ?? null);
      return { belegnummern, count: belegnummern.length, day: query.day ?? null };
    },
  }),
  route({
    method: 'post', path: '/admin/mark-mail-sent', auth: 'admin', tags,
    summary: 'Records that the delivery mails were sent (only where still open); answers what it marked and what it did not know',
    body: MarkMailSentRequest, response: MarkMailSentResponse,
    handler: ({ ctx, body }) => markMailSent(ctx.database.db, body.belegnummern),
  }),
  route({
    method: 'get', path: '/admin/reviews', auth: 'admin', tags,
    summary: 'Changed delivery notes waiting for the four-eyes confirmation, with the changes from the audit',
    response: PendingReviewList,
    handler: ({ ctx }) => pendingReviews(ctx.database.db),
  }),
  route({
    method: 'post', path: '/admin/reviews/{delivery_id}/resolve', auth: 'admin', tags,
    summary: 'Confirms the review of a delivery; it is pending again when the delivery changes afterwards',
    params: z.object({ delivery_id: Uuid }), body: ResolveReviewRequest, status: 204, errors: [404],
    handler: ({ ctx, params, body }) => resolveReview(ctx.database.db, params.delivery_id, body.processor),
  }),
];
