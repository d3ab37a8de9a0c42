import { z } from 'zod';
import { Uuid } from '../../../shared/schemas/common.js';
import { pushCompletion } from '../../engine/completion/writeBack.js';
import { route } from '../route.js';

export const adminCompletionRoutes = [
  route({
    method: 'post',
    path: '/admin/push-completion',
    auth: 'admin',
    tags: ['Admin'],
    summary: 'Repeat the ERP write-back of a completed delivery (delivered-at, state, payment term, money credit)',
    query: z.object({ delivery_id: Uuid.describe('id of a completed delivery') }),
    status: 204,
    errors: [404, 502],
    // An unknown or not completed delivery is a 404 (Completed delivery) from the write-back itself.
    handler: ({ ctx, query }) => pushCompletion(ctx, query.delivery_id),
  }),
];
