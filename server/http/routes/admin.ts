import { z } from 'zod';
import {
  CompletedDeliveriesQuery,
  CompletedDeliveriesResponse,
  DeliveredBelegnummernQuery,
  DeliveredBelegnummernResponse,
  DeliveryDetailsResponse,
  MarkMailSentRequest,
  MarkMailSentResponse,
  PendingReviewList,
  PendingReviewsQuery,
  PositionsModifiedResponse,
} from '../../../shared/schemas/admin.js';
import { ResolveReviewRequest, ReviewHistoryResponse } from '../../../shared/schemas/reviews.js';
import { Uuid } from '../../../shared/schemas/common.js';
import { markMailSent, resolveReview } from '../../engine/backOffice.js';
import { belegDetails, positionsModified } from '../../queries/adminBelege.js';
import {
  completedDeliveriesPage,
  deliveredBelegnummern,
  deliveredBelegnummernPage,
  streamCompletedDeliveries,
} from '../../queries/adminDeliveries.js';
import { pendingReviews, pendingReviewsPage } from '../../queries/adminReviews.js';
import { reviewHistory } from '../../queries/reviewHistory.js';
import type { Actor } from '../../context.js';
import { validation } from '../../errors.js';
import { jsonArrayStream } from '../jsonStream.js';
import { linkNext, pageCursor, pagingDescription } from '../paging.js';
import { route } from '../route.js';

const tags = ['Back office'];
// Any number that is not stored is simply unknown (404), however it looks.
const BelegParam = z.object({ belegnummer: z.string().min(1) });

// A cursor holds the sort key of a page's last entry (adminDeliveries.ts, adminReviews.ts).
const instant = z.iso.datetime();
const completedCursor = pageCursor('completed-deliveries', z.tuple([instant, z.string(), z.number().int()]));
const deliveredCursor = pageCursor('delivered-belegnummern', z.tuple([instant, z.string()]));
const reviewsCursor = pageCursor('reviews', z.tuple([z.number().int(), z.uuid()]));

export const adminRoutes = [
  route({
    method: 'get',
    path: '/admin/belege/{belegnummer}',
    auth: 'admin',
    tags,
    summary: 'Everything about the deliveries with this document number, in any state, newest tour first',
    params: BelegParam,
    response: DeliveryDetailsResponse,
    errors: [404],
    handler: ({ ctx, params }) => belegDetails(ctx.database.db, params.belegnummer),
  }),
  route({
    method: 'get',
    path: '/admin/belege/{belegnummer}/positions-modified',
    auth: 'admin',
    tags,
    summary: 'Whether a line was removed or reduced, or a money credit is active, on any delivery with this number',
    params: BelegParam,
    response: PositionsModifiedResponse,
    errors: [404],
    handler: async ({ ctx, params }) => ({
      belegnummer: params.belegnummer,
      positions_modified: await positionsModified(ctx.database.db, params.belegnummer),
    }),
  }),
  route({
    method: 'get',
    path: '/admin/completed-deliveries',
    auth: 'admin',
    tags,
    summary: 'Completed deliveries by Berlin day of completion (DD-MM-YYYY; day, or inclusive from/to), oldest completion first',
    query: CompletedDeliveriesQuery,
    response: CompletedDeliveriesResponse,
    // Streamed: without bounds it is every completion ever. The same bytes as `{ count, deliveries, from, to }` whole.
    description: pagingDescription(' (`count` is its length)'),
    paged: true,
    handler: async ({ ctx, query, req, res }) => {
      const range = query.day ? { from: query.day, to: query.day } : { from: query.from ?? null, to: query.to ?? null };
      const filter = `${range.from}..${range.to}`;
      const page = completedCursor.request(query, filter);
      if (page) {
        const { entries, next } = await completedDeliveriesPage(ctx.database.db, range, page);
        linkNext(req, res, page.limit, next && completedCursor.write(filter, next));
        return { count: entries.length, deliveries: entries, ...range };
      }
      const out = jsonArrayStream(res);
      await streamCompletedDeliveries(ctx.database.db, range, {
        count: (total) => out.open(`${JSON.stringify({ count: total }).slice(0, -1)},"deliveries":`),
        page: (entries) => out.items(entries),
      });
      await out.close(`,${JSON.stringify(range).slice(1)}`);
    },
  }),
  route({
    method: 'get',
    path: '/admin/delivered-belegnummern',
    auth: 'admin',
    tags,
    summary: 'Numbers of completed deliveries whose mail is not sent yet, optionally of one Berlin day (DD-MM-YYYY)',
    query: DeliveredBelegnummernQuery,
    response: DeliveredBelegnummernResponse,
    description: pagingDescription(' (`count` is its length)'),
    paged: true,
    handler: async ({ ctx, query, req, res }) => {
      const day = query.day ?? null;
      const page = deliveredCursor.request(query, String(day));
      if (!page) {
        const belegnummern = await deliveredBelegnummern(ctx.database.db, day);
        return { belegnummern, count: belegnummern.length, day };
      }
      const { entries, next } = await deliveredBelegnummernPage(ctx.database.db, day, page);
      linkNext(req, res, page.limit, next && deliveredCursor.write(String(day), next));
      return { belegnummern: entries, count: entries.length, day };
    },
  }),
  route({
    method: 'post',
    path: '/admin/mark-mail-sent',
    auth: 'admin',
    tags,
    summary: 'Records that the delivery mails were sent (only where still open); answers what it marked and what it did not know',
    body: MarkMailSentRequest,
    response: MarkMailSentResponse,
    handler: ({ ctx, body }) => markMailSent(ctx.database.db, body.belegnummern),
  }),
  route({
    method: 'get',
    path: '/admin/reviews',
    auth: 'admin',
    tags,
    summary: 'Changed delivery notes waiting for the four-eyes confirmation, with the changes from the audit',
    query: PendingReviewsQuery,
    response: PendingReviewList,
    description: pagingDescription(),
    paged: true,
    handler: async ({ ctx, query, req, res }) => {
      const page = reviewsCursor.request(query, '');
      if (!page) return pendingReviews(ctx.database.db);
      const { entries, next } = await pendingReviewsPage(ctx.database.db, page);
      linkNext(req, res, page.limit, next && reviewsCursor.write('', next));
      return entries;
    },
  }),
  route({
    method: 'post',
    path: '/admin/reviews/{delivery_id}/resolve',
    auth: 'admin',
    tags,
    summary: 'Confirms the review of a delivery; it is pending again when the delivery changes afterwards',
    description: 'With a back-office token the processor is the signed-in person (docs/back-office.md, "Who resolved a review").',
    params: z.object({ delivery_id: Uuid }),
    body: ResolveReviewRequest,
    status: 204,
    errors: [403, 404],
    handler: ({ ctx, params, body, actor }) => resolveReview(ctx.database.db, params.delivery_id, processorOf(actor, body.processor)),
  }),
  route({
    method: 'get',
    path: '/admin/reviews/{delivery_id}/history',
    auth: 'admin',
    tags,
    summary: "Every confirmation of the delivery's review, oldest first: who, which change, when",
    params: z.object({ delivery_id: Uuid }),
    response: ReviewHistoryResponse,
    errors: [404],
    handler: ({ ctx, params }) => reviewHistory(ctx.database.db, params.delivery_id),
  }),
];

/** The person a token names resolves as themselves; the machine key must say who did. */
function processorOf(actor: Extract<Actor, { kind: 'admin' }>, processor: string | undefined) {
  const problem = (message: string) => validation('Invalid body', [{ path: 'processor', message }]);
  if (!actor.person) {
    if (processor === undefined) throw problem('is required with the admin key');
    return { processor, subject: null };
  }
  if (processor !== undefined && processor !== actor.person.name)
    throw problem(`must be the signed-in person's name (${actor.person.name}) or left out`);
  return { processor: actor.person.name, subject: actor.person.subject };
}
