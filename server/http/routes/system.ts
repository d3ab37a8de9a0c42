import { z } from 'zod';
import { textParameter } from '../../../shared/schemas/common.js';
import { Account } from '../../../shared/schemas/masterData.js';
import { readAccount } from '../../queries/accounts.js';
import { notFound } from '../../errors.js';
import { route } from '../route.js';

const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n };
const int64Message = 'must be an integer (int64)';
/** A decimal int64 as text, kept as text: beyond 2^53 a JavaScript number would be another one. */
const Int64Text = z
  .string()
  .regex(/^-?\d{1,19}$/, { message: int64Message, abort: true })
  .refine((v) => BigInt(v) >= INT64.min && BigInt(v) <= INT64.max, int64Message)
  .meta(textParameter({ type: 'integer', format: 'int64' }));

export const systemRoutes = [
  route({
    method: 'get',
    path: '/health',
    auth: 'none',
    tags: ['System'],
    summary: 'Liveness and database reachability',
    produces: ['text/plain'],
    description:
      'ok, or 503 when the database does not answer within DATABASE_CONNECT_TIMEOUT_MS. While the connection that carries ' +
      "other instances' changes (LISTEN) is down, the text says so; live clients are then served by polling.",
    handler: async ({ ctx, res }) => {
      await ctx.database.check();
      ctx.database.health.recovered();
      res.type('text/plain').send(ctx.database.health.listening ? 'ok' : 'ok; change listener down, live clients are polled');
    },
  }),
  route({
    method: 'get',
    path: '/accounts/{personalnummer}',
    auth: 'sync',
    tags: ['Accounts'],
    summary: 'An account by Personalnummer: a driver token reads only its own (404 for any other), the sync role and the admin key any',
    params: z.object({ personalnummer: Int64Text }),
    response: Account,
    errors: [404],
    handler: async ({ ctx, actor, params }) => {
      // Accounts are numbered within JavaScript's safe integers; any other int64 is simply unknown.
      const personalnummer = Number(params.personalnummer);
      const mayRead = actor.kind === 'admin' || actor.syncRole || actor.personalnummer === personalnummer;
      const row = mayRead && Number.isSafeInteger(personalnummer) ? await readAccount(ctx.database.db, personalnummer) : undefined;
      if (!row) throw notFound('Account');
      return row;
    },
  }),
];
