import type { Request, Response } from 'express';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { INT32_MAX, queryInt, Uuid } from '../../../shared/schemas/common.js';
import { notFound } from '../../errors.js';
import type { PreviewRequest } from '../../integrations/documents/store.js';
import { previewContentTypes } from '../../integrations/previews/render.js';
import { ownAttachment } from '../../queries/ownership.js';
import { ifNoneMatch } from '../etag.js';
import { route } from '../route.js';

export const PreviewQuery = z.object({
  w: queryInt(1024, 0, INT32_MAX, 'Maximum width in pixels; 0 leaves the width free'),
  h: queryInt(1024, 0, INT32_MAX, 'Maximum height in pixels; 0 leaves the height free'),
  q: queryInt(85, 0, 100, 'Quality 0..100 for jpeg, webp and tiff; png is lossless'),
  ext: z.enum(['png', 'jpeg', 'jpg', 'webp', 'tiff']).default('jpeg').describe('Output format (default jpeg)'),
  page: queryInt(1, 1, INT32_MAX, 'Page of a PDF (or multi-page image), 1-based; must exist'),
});

/** The preview of one attachment, with its ETag (attachments never change, so a matching one is always valid). */
async function answerPreview(input: {
  ctx: AppContext;
  accountId: number | null;
  id: string;
  query: z.output<typeof PreviewQuery>;
  req: Request;
  res: Response;
}) {
  const { ctx, query, req, res } = input;
  const attachment = await ownAttachment(ctx.database.db, input.accountId, input.id);
  if (!attachment) throw notFound('Attachment');

  const request: PreviewRequest = {
    width: query.w,
    height: query.h,
    quality: query.q,
    format: query.ext === 'jpg' ? 'jpeg' : query.ext,
    page: query.page,
  };
  const etag = ctx.previews.etag(attachment.id, request);
  // Only a rendered preview carries the ETag: a page that does not exist must not be cached.
  const validators = { ETag: etag, 'Cache-Control': 'private, max-age=86400' };
  if (ifNoneMatch(req.header('if-none-match'), etag)) {
    res.set(validators).status(304).end();
    return;
  }
  const preview = await ctx.previews.render(attachment, request);
  res.set(validators).status(200).type(preview.contentType).send(preview.bytes);
}

const common = {
  tags: ['Attachments'],
  params: z.object({ id: Uuid }),
  query: PreviewQuery,
  produces: Object.values(previewContentTypes),
  conditional: true,
  errors: [404],
};

export const attachmentRoutes = [
  route({
    ...common,
    method: 'get',
    path: '/attachments/{id}',
    auth: 'bearer',
    summary:
      'A preview of an attachment (signature, note image, delivery report page): fit inside w x h, never enlarged; ETag and If-None-Match (304)',
    handler: ({ ctx, actor, params, query, req, res }) =>
      answerPreview({ ctx, accountId: actor.personalnummer, id: params.id, query, req, res }),
  }),
  route({
    ...common,
    method: 'get',
    path: '/admin/attachments/{id}',
    auth: 'admin',
    summary: "The same preview of any delivery's attachment, for the back office (signatures, report pages)",
    handler: ({ ctx, params, query, req, res }) => answerPreview({ ctx, accountId: null, id: params.id, query, req, res }),
  }),
];
