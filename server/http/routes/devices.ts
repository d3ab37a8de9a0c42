import { z } from 'zod';
import { AdminDevicesQuery, AdminDevicesResponse, DEVICE_REPORT_MAX_BYTES, DeviceReport } from '../../../shared/schemas/devices.js';
import { listDevices } from '../../queries/adminDevices.js';
import { listPage, pageCursor, pagingDescription } from '../paging.js';
import { route } from '../route.js';

const devicesCursor = pageCursor('devices', z.tuple([z.number().int(), z.uuid()]));

export const deviceRoutes = [
  route({
    method: 'post',
    path: '/sync/device',
    auth: 'bearer',
    tags: ['Sync'],
    summary: "Report this device's sync health (a small request, for when neither a push nor the live socket carries it)",
    description:
      'The same report travels in `PushRequest.device` and as the WebSocket message `{"type":"device","report":...}`. ' +
      "The account is the token's. 409 when another account reports this device id, 413 past the size cap, " +
      '429 (Retry-After) when one device reports more than once a second or an account floods.',
    body: DeviceReport,
    bodyLimitBytes: DEVICE_REPORT_MAX_BYTES,
    status: 204,
    errors: [409, 413, 429],
    handler: async ({ ctx, actor, body }) => {
      await ctx.devices.store(ctx.database.db, actor.personalnummer, body);
    },
  }),
  route({
    method: 'get',
    path: '/admin/devices',
    auth: 'admin',
    tags: ['Back office'],
    summary: "Every device's latest sync health report: unsent work, refusals, versions; a device unseen keeps its last report",
    query: AdminDevicesQuery,
    response: AdminDevicesResponse,
    description: `Filters combine (all must hold). ${pagingDescription(' (`count` is its length)')}`,
    paged: true,
    handler: async ({ ctx, query, req, res }) => {
      const { limit, cursor, ...filters } = query;
      const filter = {
        account: filters.account,
        staleForMoreThanMinutes: filters.stale_for_more_than_minutes,
        pendingOlderThanMinutes: filters.pending_older_than_minutes,
        holdsCompletions: filters.holds_completions,
        hasRefusals: filters.has_refusals,
        sdkVersion: filters.sdk_version,
        appVersion: filters.app_version,
      };
      const key = JSON.stringify(filters);
      const entries = await listPage(devicesCursor, key, { query: { limit, cursor }, req, res }, (page) =>
        listDevices(ctx.database.db, filter, page),
      );
      return { count: entries.length, devices: entries };
    },
  }),
];
