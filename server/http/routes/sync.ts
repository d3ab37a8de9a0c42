import {
  ChangesQuery,
  ChangesResponse,
  PushRequest,
  PushResponse,
  SyncCursorResponse,
  WsClientMessage,
  WsServerMessage,
} from '../../../shared/schemas/sync.js';
import { isRefusal, scanRejectionCode } from '../../../shared/rules/eventResults.js';
import type { DeviceReportAnswer } from '../../../shared/schemas/devices.js';
import type { AppContext } from '../../context.js';
import { applyEvents } from '../../engine/apply.js';
import { currentCursor, pullChanges } from '../../engine/changeFeed.js';
import { validation } from '../../errors.js';
import { eventWindowStart } from '../../jobs/eventRetention.js';
import { route } from '../route.js';
import { SYNC_WS_PATH } from '../ws.js';

/** The device report a push brings, answered whatever happens to it; the push does not wait for its write. */
function storeAlong(ctx: AppContext, personalnummer: number, report: unknown): Promise<DeviceReportAnswer> {
  return ctx.devices.answer(ctx.database.db, personalnummer, report, { behind: true }).catch((error: unknown) => {
    ctx.logger.warn({ err: error }, 'a device report sent with a push was not stored');
    return { status: 'refused', code: 'internal', message: 'Not stored; send it again later' };
  });
}

export const syncRoutes = [
  route({
    method: 'post',
    path: '/sync/push',
    auth: 'bearer',
    checksAccount: true,
    // Every phone pushes every half minute or so: the most frequent request of all.
    direct: true,
    tags: ['Sync'],
    summary:
      'Apply 1 to 500 outbox events in order; one result per event (applied, duplicate or rejected). A malformed event refuses the whole batch with 400.',
    body: PushRequest,
    response: PushResponse,
    handler: async ({ ctx, actor, body }) => {
      // Beside the events, not in their transaction: a report, kept or refused, never holds them up or fails them.
      const device = body.device === undefined ? undefined : storeAlong(ctx, actor.personalnummer, body.device);
      const results = await applyEvents(ctx.database.db, actor, body.events, {
        clientId: body.clientId,
        acceptedSince: eventWindowStart(ctx.config.processedEventRetentionDays),
        ...ctx.metrics.engine,
      });
      // A refused scan names the contract's scan rejection code (quantity_exceeded, ...), as /scans does.
      return {
        results: results.map((r, i) => (body.events[i].type === 'scan' && isRefusal(r) ? { ...r, code: scanRejectionCode(r) } : r)),
        ...(device && { device: await device }),
      };
    },
  }),
  route({
    method: 'get',
    path: '/sync/changes',
    auth: 'bearer',
    tags: ['Sync'],
    summary:
      'Changes the caller may see after a cursor, in commit order; without `since` from the oldest retained change. ' +
      'A cursor of a reset database, an expired cursor (older than the change-log retention) or garbage answers 400: resync.',
    query: ChangesQuery,
    response: ChangesResponse,
    handler: ({ ctx, actor, query }) => pullChanges(ctx.database.db, ctx.database.epoch, actor.personalnummer, query.since, query.limit),
  }),
  route({
    method: 'get',
    path: '/sync/cursor',
    auth: 'bearer',
    tags: ['Sync'],
    summary: 'The cursor of now: take it before reading the tours, then pull or resume from it (first start and resync).',
    response: SyncCursorResponse,
    handler: async ({ ctx }) => ({ cursor: await currentCursor(ctx.database.db, ctx.database.epoch) }),
  }),
  route({
    method: 'get',
    path: SYNC_WS_PATH,
    auth: 'bearer',
    tags: ['Sync'],
    errors: [400, 403],
    summary: 'Live change feed over a WebSocket: send `resume` with a cursor, receive `changes` as they commit',
    description:
      'Upgrade with `Authorization: Bearer <token>` or the subprotocol pair `bearer, <token>`. The client sends ' +
      '`WsClientMessage`s, the server answers with `WsServerMessage`s. Close codes: 1012 server restarting (reconnect, to another instance), 1011 internal ' +
      'error, 4401 token expired, 4403 account deactivated, 4408 slow consumer; after any of them reconnect and resume from the last applied cursor. ' +
      "A request without the handshake answers 400; a page of a foreign `Origin` (neither the service's own nor in CORS_ORIGINS) 403. The protocol in full: docs/sync-protocol.md in the repository.",
    webSocket: { clientMessages: WsClientMessage, serverMessages: WsServerMessage },
    handler: async () => {
      throw validation(`${SYNC_WS_PATH} takes a WebSocket handshake (Upgrade: websocket)`);
    },
  }),
];
