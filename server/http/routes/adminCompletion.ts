import { z } from 'zod';
import { Uuid } from '../../../shared/schemas/common.js';
import { ErpWriteBackList, ErpWriteBacksQuery } from '../../../shared/schemas/imports.js';
import { pushCancellation } from '../../engine/completion/cancellationWriteBack.js';
import { pushCompletion } from '../../engine/completion/writeBack.js';
import { notFound } from '../../errors.js';
import { deliveryReport, erpWriteBacks } from '../../queries/erpWriteBacks.js';
import { linkNext, pageCursor } from '../paging.js';
import { route } from '../route.js';

const tags = ['Admin'];
const writeBacksCursor = pageCursor('erp-write-backs', z.tuple([z.iso.datetime(), z.string(), z.uuid()]));

export const adminCompletionRoutes = [
  route({
    method: 'post',
    path: '/admin/push-completion',
    auth: 'admin',
    tags,
    summary:
      'Repeat the ERP write-back of a completed delivery (delivered-at, state, payment term, money credit, report), also one the ERP refused; same Idempotency-Key',
    query: z.object({ delivery_id: Uuid.describe('id of a completed delivery') }),
    status: 204,
    errors: [404, 502],
    // An unknown or not completed delivery is a 404 (Completed delivery) from the write-back itself.
    handler: ({ ctx, query }) => pushCompletion(ctx, query.delivery_id),
  }),
  route({
    method: 'post',
    path: '/admin/push-cancellation',
    auth: 'admin',
    tags,
    summary:
      "Repeat the ERP write-back of a driver's cancellation (with ERP_PUSH_CANCELLATIONS), also one the ERP refused; same Idempotency-Key",
    query: z.object({ delivery_id: Uuid.describe('id of a delivery a driver canceled') }),
    status: 204,
    errors: [404, 502],
    handler: ({ ctx, query }) => {
      // Off, cancellations stay with Tourline: an ERP that knows only completions is not sent one.
      if (!ctx.config.erp.pushCancellations) throw notFound('Cancellation write-back (ERP_PUSH_CANCELLATIONS is off)');
      return pushCancellation(ctx, query.delivery_id);
    },
  }),
  route({
    method: 'get',
    path: '/admin/erp-write-backs',
    auth: 'admin',
    tags,
    summary: 'Completions and cancellations whose ERP write-back has not succeeded (or of one status), oldest first, with the last failure',
    description:
      'With `limit` or `cursor`, one page; the `Link` header (rel="next") names the next page and is absent on the last. ' +
      'Without either, the whole list (docs/back-office.md, "Paging").',
    query: ErpWriteBacksQuery,
    response: ErpWriteBackList,
    paged: true,
    handler: async ({ ctx, query, req, res }) => {
      const filter = query.status ?? '';
      const page = writeBacksCursor.request(query, filter);
      const { entries, next } = await erpWriteBacks(ctx.database.db, query.status ?? null, page);
      if (page) linkNext(req, res, page.limit, next && writeBacksCursor.write(filter, next));
      return { count: entries.length, write_backs: entries };
    },
  }),
  route({
    method: 'get',
    path: '/admin/deliveries/{delivery_id}/report',
    auth: 'admin',
    tags,
    summary: 'The delivery report (PDF) of a completed delivery, as stored in the document store; 404 while it is not stored yet',
    params: z.object({ delivery_id: Uuid }),
    produces: ['application/pdf'],
    errors: [404, 502],
    handler: async ({ ctx, params, res }) => {
      const report = await deliveryReport(ctx.database.db, params.delivery_id);
      if (!report) throw notFound('Delivery report');
      const { bytes } = await ctx.documents.get(report.reference);
      res
        .status(200)
        .type('application/pdf')
        .set(
          'Content-Disposition',
          `attachment; filename="Lieferbericht.pdf"; filename*=UTF-8''${encodeURIComponent(`Lieferbericht-${report.belegnummer}.pdf`)}`,
        )
        .set('Cache-Control', 'private, no-store')
        .send(bytes);
    },
  }),
];
