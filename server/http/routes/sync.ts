import { ChangesQuery, ChangesResponse, PushRequest, PushResponse, SyncCursorResponse } from '../../../shared/schemas/sync.js';
import { applyEvents } from '../../engine/apply.js';
import { currentCursor, pullChanges } from '../../engine/changeFeed.js';
import { route } from '../route.js';

export const syncRoutes = [
  route({
    method: 'post', path: '/sync/push', auth: 'bearer', tags: ['Sync'],
    summary: 'Apply 1 to 500 outbox events in order; one result per event (applied, duplicate or rejected). A malformed event refuses the whole batch with 400.',
    body: PushRequest, response: PushResponse,
    handler: async ({ ctx, actor, body }) => ({ results: await applyEvents(ctx.database.db, actor, body.events, { clientId: body.clientId }) }),
  }),
  route({
    method: 'get', path: '/sync/changes', auth: 'bearer', tags: ['Sync'],
    summary: 'Changes the caller may see after a cursor, in commit order; without `since` from the oldest retained change. '
      + 'A cursor of a reset database, an expired cursor (older than the change-log retention) or garbage answers 400: resync.',
    query: ChangesQuery, response: ChangesResponse,
    handler: ({ ctx, actor, query }) => pullChanges(ctx.database.db, ctx.database.epoch, actor.personalnummer, query.since, query.limit),
  }),
  route({
    method: 'get', path: '/sync/cursor', auth: 'bearer', tags: ['Sync'],
    summary: 'The cursor of now: take it before reading the tours, then pull or resume from it (first start and resync).',
    response: SyncCursorResponse,
    handler: async ({ ctx }) => ({ cursor: await currentCursor(ctx.database.db, ctx.database.epoch) }),
  }),
];
