import { and, asc, eq, gt, lt, sql, type SQL } from 'drizzle-orm';
import type { AdminDevice } from '../../shared/schemas/devices.js';
import type { Db } from '../db/client.js';
import { devices } from '../db/schema.js';
import { iso, isoOrNull } from './adminShapes.js';
import { cutPage, type Page, type PageRequest } from './page.js';

export interface DeviceFilter {
  account?: number;
  staleForMoreThanMinutes?: number;
  pendingOlderThanMinutes?: number;
  holdsCompletions?: boolean;
  hasRefusals?: boolean;
  sdkVersion?: string;
  appVersion?: string;
}

/** A device's place in the list: account, then device id (neither changes, so pages never drift). */
export type DeviceKey = [accountId: number, deviceId: string];

const minutesAgo = (minutes: number) => sql`now() - make_interval(mins => ${minutes})`;

function conditions(filter: DeviceFilter): SQL[] {
  const holds = sql`${devices.pendingCompletionCount} > 0`;
  const refused = sql`${devices.rejectedCount} > 0`;
  return [
    ...(filter.account !== undefined ? [eq(devices.accountId, filter.account)] : []),
    ...(filter.staleForMoreThanMinutes !== undefined ? [lt(devices.lastSeenAt, minutesAgo(filter.staleForMoreThanMinutes))] : []),
    // Pending since before N minutes ago: with 0, any device with work waiting.
    ...(filter.pendingOlderThanMinutes !== undefined
      ? [gt(devices.pendingCount, 0), sql`${devices.oldestPendingSince} <= ${minutesAgo(filter.pendingOlderThanMinutes)}`]
      : []),
    ...(filter.holdsCompletions === undefined ? [] : [filter.holdsCompletions ? holds : sql`NOT (${holds})`]),
    ...(filter.hasRefusals === undefined ? [] : [filter.hasRefusals ? refused : sql`NOT (${refused})`]),
    ...(filter.sdkVersion !== undefined ? [eq(devices.sdkVersion, filter.sdkVersion)] : []),
    ...(filter.appVersion !== undefined ? [eq(devices.appVersion, filter.appVersion)] : []),
  ];
}

/**
 * The named completions with their document numbers, looked up among the device account's own
 * tours only: a report naming another account's delivery shows no number of it.
 */
const completionsJson = sql<{ delivery_id: string; belegnummer: string | null; completed_at: string }[]>`(
  SELECT coalesce(json_agg(json_build_object('delivery_id', e.delivery_id, 'belegnummer', dl.belegnummer,
    'completed_at', e.completed_at) ORDER BY e.completed_at, e.delivery_id), '[]'::json)
  FROM jsonb_to_recordset(${devices.pendingCompletions}) AS e(delivery_id uuid, completed_at text)
  LEFT JOIN deliveries dl ON dl.id = e.delivery_id
    AND dl.tour_id IN (SELECT t.id FROM tours t WHERE t.account_id = ${devices.accountId}))`;

type DeviceRow = typeof devices.$inferSelect & { completions: AdminDevice['pending_completions'] };

function toAdminDevice(row: DeviceRow): AdminDevice {
  return {
    device_id: row.deviceId,
    account_id: row.accountId,
    sdk_version: row.sdkVersion,
    app_name: row.appName,
    app_version: row.appVersion,
    platform: row.platform,
    pending_count: row.pendingCount,
    oldest_pending:
      row.oldestPendingSince && row.oldestPendingType
        ? { since: iso(row.oldestPendingSince), type: row.oldestPendingType, delivery_id: row.oldestPendingDeliveryId }
        : null,
    pending_completion_count: row.pendingCompletionCount,
    pending_completions: row.completions,
    rejected_count: row.rejectedCount,
    outbox_bytes: row.outboxBytes,
    attachment_bytes: row.attachmentBytes,
    last_push_at: isoOrNull(row.lastPushAt),
    last_pull_at: isoOrNull(row.lastPullAt),
    last_error_code: row.lastErrorCode,
    first_seen_at: iso(row.firstSeenAt),
    last_seen_at: iso(row.lastSeenAt),
  };
}

/** One page of the devices that pass the filter (all of them without a page request), by account and device id. */
export async function listDevices(db: Db, filter: DeviceFilter, page?: PageRequest<DeviceKey>): Promise<Page<AdminDevice, DeviceKey>> {
  const after = page?.after ? [sql`(${devices.accountId}, ${devices.deviceId}) > (${page.after[0]}::bigint, ${page.after[1]}::uuid)`] : [];
  const query = db
    .select({ device: devices, completions: completionsJson })
    .from(devices)
    .where(and(...conditions(filter), ...after))
    .orderBy(asc(devices.accountId), asc(devices.deviceId));
  const rows = await (page ? query.limit(page.limit + 1) : query);
  const flat = rows.map((r) => ({ ...r.device, completions: r.completions }));
  return cutPage(flat, page?.limit ?? flat.length, (row) => [row.accountId, row.deviceId] as DeviceKey, toAdminDevice);
}

export interface DeviceGauges {
  bySdkVersion: { sdkVersion: string; count: number }[];
  pendingOver15Minutes: number;
  pendingCompletions: number;
  oldestPendingSeconds: number;
}

/** What the Prometheus gauges show of the devices, in two statements; all instances see the same. */
export async function deviceGauges(db: Db): Promise<DeviceGauges> {
  const versions = await db.execute<{ sdk_version: string; n: number }>(
    sql`SELECT sdk_version, count(*)::int AS n FROM devices GROUP BY sdk_version ORDER BY sdk_version`,
  );
  const totals = await db.execute<{ over15: number; completions: number; oldest: number | null }>(sql`
    SELECT count(*) FILTER (WHERE pending_count > 0 AND oldest_pending_since <= now() - interval '15 minutes')::int AS over15,
      coalesce(sum(pending_completion_count), 0)::int AS completions,
      extract(epoch FROM now() - min(oldest_pending_since) FILTER (WHERE pending_count > 0))::float8 AS oldest
    FROM devices`);
  const t = totals.rows[0];
  return {
    bySdkVersion: versions.rows.map((r) => ({ sdkVersion: r.sdk_version, count: Number(r.n) })),
    pendingOver15Minutes: Number(t.over15),
    pendingCompletions: Number(t.completions),
    oldestPendingSeconds: Math.max(0, Number(t.oldest ?? 0)),
  };
}
