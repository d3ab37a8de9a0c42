import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { Account } from '../../../shared/schemas/masterData.js';
import { accounts } from '../../db/schema.js';
import { notFound } from '../../errors.js';
import { route } from '../route.js';

export const systemRoutes = [
  route({
    method: 'get', path: '/health', auth: 'none', tags: ['System'], summary: 'Liveness and database reachability', produces: ['text/plain'],
    handler: async ({ ctx, res }) => {
      await ctx.database.db.execute('SELECT 1');
      res.type('text/plain').send('ok');
    },
  }),
  route({
    method: 'get', path: '/accounts/{personalnummer}', auth: 'bearer', tags: ['Accounts'], summary: 'An account by Personalnummer',
    params: z.object({ personalnummer: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER) }), response: Account, errors: [404],
    handler: async ({ ctx, params }) => {
      const [row] = await ctx.database.db.select().from(accounts).where(eq(accounts.personalnummer, params.personalnummer));
      if (!row) throw notFound('Account');
      return { personalnummer: row.personalnummer, name: row.name, active: row.active };
    },
  }),
];
