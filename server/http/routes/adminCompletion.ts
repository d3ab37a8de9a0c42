import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { Uuid } from '../../../shared/schemas/common.js';
import { completions } from '../../db/schema.js';
import { notFound } from '../../errors.js';
import { pushCompletion } from '../../jobs/erpWriteBack.js';
import { route } from '../route.js';

export const adminCompletionRoutes = [
  route({
    method: 'post', path: '/admin/push-completion', auth: 'admin', tags: ['Admin'],
    summary: 'Repeat the ERP write-back of a completed delivery (delivered-at, state, payment term, money credit)',
    query: z.object({ delivery_id: Uuid.describe('id of a completed delivery') }), status: 204, errors: [404, 502],
    handler: async ({ ctx, query }) => {
      const [completion] = await ctx.database.db.select({ id: completions.deliveryId }).from(completions)
        .where(eq(completions.deliveryId, query.delivery_id));
      if (!completion) throw notFound('Completed delivery');
      await pushCompletion(ctx, query.delivery_id);
    },
  }),
];
