import { z } from 'zod';
import { missingSignatureRefusal } from '../../../shared/rules/refusals.js';
import { Uuid } from '../../../shared/schemas/common.js';
import { CompleteDeliveryAcknowledgements, DeliveryResponse } from '../../../shared/schemas/deliveries.js';
import { completeDelivery } from '../../engine/completion/complete.js';
import { validation } from '../../errors.js';
import { IMAGE_MAX_PIXELS, IMAGE_MAX_SIDE, imageMetadata, plainPng, withinImageLimits } from '../../integrations/images.js';
import { readMultipart, type MultipartBody, type UploadedFile } from '../multipart.js';
import { parseInput } from '../problem.js';
import { route } from '../route.js';

const SIGNATURE_PARTS = ['customer_signature', 'driver_signature'] as const;

/** A signature must be a PNG that decodes, whatever the part's name or declared type says. */
async function signaturePng(body: MultipartBody, part: (typeof SIGNATURE_PARTS)[number]): Promise<UploadedFile> {
  const file = body.files.get(part);
  if (!file || file.bytes.length === 0) {
    const missing = missingSignatureRefusal(part);
    throw validation(missing.message, missing.errors);
  }
  const header = await imageMetadata(file.bytes);
  if (header?.format === 'png' && !withinImageLimits(header))
    throw validation(`The ${part} is too large`, [
      {
        path: part,
        message: `must have at most ${IMAGE_MAX_PIXELS} pixels (as many as 4096 × 4096) and at most ${IMAGE_MAX_SIDE} on a side`,
      },
    ]);
  if ((await plainPng(file.bytes)) === undefined)
    throw validation(`The ${part} is not a PNG image that decodes`, [
      { path: part, message: 'must be a PNG image of at most 16 777 216 pixels (as many as 4096 × 4096)' },
    ]);
  return file;
}

/** The acknowledgements arrive as a plain field or as a JSON file part. */
function acknowledgements(body: MultipartBody): CompleteDeliveryAcknowledgements {
  const raw = body.fields.get('acknowledgements') ?? body.files.get('acknowledgements')?.bytes.toString('utf8');
  if (raw === undefined)
    throw validation('Missing part: acknowledgements', [
      { path: 'acknowledgements', message: 'JSON of CompleteDeliveryAcknowledgements is required' },
    ]);
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw validation('The acknowledgements are not valid JSON', [{ path: 'acknowledgements', message: 'not valid JSON' }]);
  }
  return parseInput(CompleteDeliveryAcknowledgements, json, 'Invalid acknowledgements', 'acknowledgements');
}

const multipartSchema = {
  type: 'object',
  required: [...SIGNATURE_PARTS, 'acknowledgements'],
  properties: {
    customer_signature: { type: 'string', format: 'binary', description: 'PNG image' },
    driver_signature: { type: 'string', format: 'binary', description: 'PNG image' },
    acknowledgements: {
      ...z.toJSONSchema(CompleteDeliveryAcknowledgements, { io: 'input' }),
      description: 'JSON of CompleteDeliveryAcknowledgements, as a field or a JSON part',
    },
  },
};

export const completionRoutes = [
  route({
    method: 'post',
    path: '/deliveries/{delivery_id}/complete',
    auth: 'bearer',
    tags: ['Delivery lifecycle'],
    summary: 'Complete a delivery with both signatures (multipart); a repeated clientEventId answers with the current delivery',
    params: z.object({ delivery_id: Uuid }),
    rawBody: { contentType: 'multipart/form-data', schema: multipartSchema },
    response: DeliveryResponse,
    errors: [404, 413, 415],
    handler: async ({ ctx, actor, params, req }) => {
      const body = await readMultipart(req, { limitBytes: ctx.config.uploadLimitBytes });
      const ack = acknowledgements(body);
      const [customer, driver] = [await signaturePng(body, 'customer_signature'), await signaturePng(body, 'driver_signature')];
      const delivery = await completeDelivery(ctx, actor, {
        deliveryId: params.delivery_id,
        acknowledgements: ack,
        customerSignature: customer.bytes,
        driverSignature: driver.bytes,
      });
      return { delivery };
    },
  }),
];
