import { z } from 'zod';
import { Uuid } from '../../../shared/schemas/common.js';
import { ErpWriteBackList, ErpWriteBacksQuery } from '../../../shared/schemas/imports.js';
import { pushCancellation } from '../../engine/completion/cancellationWriteBack.js';
import { pushCompletion } from '../../engine/completion/writeBack.js';
import type { AppContext } from '../../context.js';
import { notFound } from '../../errors.js';
import { deliveryReport, erpWriteBacks } from '../../queries/erpWriteBacks.js';
import { listPage, pageCursor, pagingDescription } from '../paging.js';
import { route } from '../route.js';

const tags = ['Admin'];
const writeBacksCursor = pageCursor('erp-write-backs', z.tuple([z.iso.datetime(), z.string(), z.uuid()]));

/** A route that sends one delivery's write-back to the ERP again, now. */
const repeatWriteBack = (
  path: string,
  summary: string,
  idDescription: string,
  push: (ctx: AppContext, deliveryId: string) => Promise<void>,
) =>
  route({
    method: 'post',
    path,
    auth: 'admin',
    tags,
    summary,
    query: z.object({ delivery_id: Uuid.describe(idDescription) }),
    status: 204,
    errors: [404, 502],
    handler: ({ ctx, query }) => push(ctx, query.delivery_id),
  });

export const adminCompletionRoutes = [
  repeatWriteBack(
    '/admin/push-completion',
    'Repeat the ERP write-back of a completed delivery (delivered-at, state, payment term, money credit, report), also one the ERP refused; same Idempotency-Key',
    'id of a completed delivery',
    // An unknown or not completed delivery is a 404 (Completed delivery) from the write-back itself.
    pushCompletion,
  ),
  repeatWriteBack(
    '/admin/push-cancellation',
    "Repeat the ERP write-back of a driver's cancellation (with ERP_PUSH_CANCELLATIONS), also one the ERP refused; same Idempotency-Key",
    'id of a delivery a driver canceled',
    (ctx, deliveryId) => {
      // Off, cancellations stay with Tourline: an ERP that knows only completions is not sent one.
      if (!ctx.config.erp.pushCancellations) throw notFound('Cancellation write-back (ERP_PUSH_CANCELLATIONS is off)');
      return pushCancellation(ctx, deliveryId);
    },
  ),
  route({
    method: 'get',
    path: '/admin/erp-write-backs',
    auth: 'admin',
    tags,
    summary: 'Completions and cancellations whose ERP write-back has not succeeded (or of one status), oldest first, with the last failure',
    description: pagingDescription(),
    query: ErpWriteBacksQuery,
    response: ErpWriteBackList,
    paged: true,
    handler: async ({ ctx, query, req, res }) => {
      const entries = await listPage(writeBacksCursor, query.status ?? '', { query, req, res }, (page) =>
        erpWriteBacks(ctx.database.db, query.status ?? null, page),
      );
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
