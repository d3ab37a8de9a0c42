import { createHash } from 'node:crypto';
import { newId } from '../../../shared/ids.js';
import { z } from 'zod';
import { NOTE_TEXT_MAX } from '../../../shared/rules/notes.js';
import { Uuid } from '../../../shared/schemas/common.js';
import { DeliveryNoteResponse, type Note } from '../../../shared/schemas/deliveries.js';
import { applyEvent } from '../../engine/apply.js';
import { DomainError, notFound, validation } from '../../errors.js';
import { checkImage, IMAGE_MAX_PIXELS, IMAGE_MAX_SIDE } from '../../integrations/images.js';
import { ownsDelivery } from '../../queries/ownership.js';
import { readMultipart } from '../multipart.js';
import { parseInput } from '../problem.js';
import { route } from '../route.js';

// Optional form fields: an outbox sends its own ids so that a resend after a lost answer is a duplicate, not a second note.
const NoteImageFields = z.object({
  noteId: Uuid.optional(),
  clientEventId: Uuid.optional(),
  text: z.string().max(NOTE_TEXT_MAX).optional(),
  authorCarId: Uuid.optional(),
});

/**
 * The note id of an upload that names none: one that follows from its clientEventId, so that a
 * resend names the note the first upload made (a UUID of version 8, RFC 9562's custom kind).
 */
function noteIdOf(clientEventId: string | undefined): string {
  if (!clientEventId) return newId();
  const hex = createHash('sha256').update(`note-image/${clientEventId}`).digest('hex');
  const variant = ((parseInt(hex[16], 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

const imageTypes: Record<string, string> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  tiff: 'image/tiff',
  heif: 'image/heif',
  avif: 'image/avif',
};

export const noteImageRoutes = [
  route({
    method: 'post',
    path: '/deliveries/{delivery_id}/notes/image',
    auth: 'bearer',
    tags: ['Notes'],
    summary: 'Upload an image to the document store and create a note with its reference',
    params: z.object({ delivery_id: Uuid }),
    rawBody: {
      contentType: 'multipart/form-data',
      schema: {
        type: 'object',
        required: ['file'],
        properties: {
          file: { type: 'string', format: 'binary', description: 'image bytes' },
          noteId: {
            type: 'string',
            format: 'uuid',
            description:
              'client-generated note id (optional; without it the note id follows from clientEventId, so a resend answers the same note)',
          },
          clientEventId: { type: 'string', format: 'uuid', description: 'idempotency key: a repeat answers the same note (optional)' },
          text: { type: 'string', description: 'note text beside the image (optional)' },
          authorCarId: { type: 'string', format: 'uuid', description: 'car of the account (optional)' },
        },
      },
    },
    response: DeliveryNoteResponse,
    errors: [404, 413, 415, 500],
    handler: async ({ ctx, actor, params, req }) => {
      const body = await readMultipart(req, { limitBytes: ctx.config.uploadLimitBytes });
      const fields = parseInput(NoteImageFields, Object.fromEntries(body.fields), 'Invalid form fields');
      const file = body.files.get('file');
      if (!file || file.bytes.length === 0) throw validation('No or empty file', [{ path: 'file', message: 'an image file is required' }]);
      const image = await checkImage(file.bytes);
      if (!image.ok && image.reason === 'too_many_pixels') {
        throw validation('The image is too large', [
          {
            path: 'file',
            message: `must have at most ${IMAGE_MAX_PIXELS} pixels (as many as 4096 x 4096) and at most ${IMAGE_MAX_SIDE} on a side`,
          },
        ]);
      }
      const contentType = image.ok ? imageTypes[image.format] : undefined;
      if (!contentType)
        throw validation('The file is not an image', [
          { path: 'file', message: 'must be an image (PNG, JPEG, WebP, GIF, TIFF, HEIF, AVIF)' },
        ]);
      // Checked before the upload so that a foreign delivery leaves nothing in the store.
      if (!(await ownsDelivery(ctx.database.db, actor.personalnummer, params.delivery_id))) throw notFound('Delivery');

      let reference: string;
      try {
        reference = await ctx.documents.put(file.bytes, contentType, file.filename);
      } catch (error) {
        ctx.logger.error({ err: error }, 'note image upload failed');
        throw new DomainError('internal', 'Uploading the image to the document store failed', undefined, 500);
      }
      const note = await applyEvent(
        ctx.database.db,
        actor,
        {
          type: 'note.create',
          eventId: fields.clientEventId ?? newId(),
          occurredAt: new Date().toISOString(),
          deliveryId: params.delivery_id,
          noteId: fields.noteId ?? noteIdOf(fields.clientEventId),
          imageAttachment: reference,
          text: fields.text,
          authorCarId: fields.authorCarId,
        },
        { attachment: { reference, contentType, sizeBytes: file.bytes.length }, ...ctx.metrics.engine },
      );
      return { note: note as Note };
    },
  }),
];
