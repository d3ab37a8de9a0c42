import { sql } from 'drizzle-orm';
import { DEVICE_REPORT_MAX_BYTES, DeviceReport, type DeviceReportAnswer } from '../../shared/schemas/devices.js';
import type { Db } from '../db/client.js';
import { devices } from '../db/schema.js';
import { conflict, DomainError, validation } from '../errors.js';

/** How often one device's report is written at most, and how many reports one account's devices send per second on average (and at once). */
const DEVICE_MIN_INTERVAL_MS = 1000;
const ACCOUNT_RATE_PER_S = 20;
const ACCOUNT_BURST = 60;
/** Devices and accounts the rate cap remembers at most; past this the oldest go first. */
const TRACKED = 20_000;

export interface DeviceReportOptions {
  /** The most devices kept per account: a new one past it pushes out the one that holds no work and was seen longest ago. */
  maxPerAccount: number;
  now?: () => number;
}

/**
 * Keeps the latest health report of each device. The account is the caller's (its token),
 * never the report's; a device id another account reported is refused (409), so no report can
 * change another account's device. A report is checked on its own and capped in rate
 * (one write per device per second, a bucket per account), so a bad or flooding one costs a
 * push nothing but its refusal.
 */
export function createDeviceReports(options: DeviceReportOptions) {
  const now = options.now ?? Date.now;
  const lastWrite = new Map<string, number>();
  const buckets = new Map<number, { tokens: number; at: number }>();
  const remember = <K, V>(map: Map<K, V>, key: K, value: V) => {
    map.delete(key);
    if (map.size >= TRACKED) map.delete(map.keys().next().value!);
    map.set(key, value);
  };

  /** Refuses a report the rate cap does not let through now; takes its share when it does. */
  const admit = (accountId: number, deviceId: string) => {
    const at = now();
    // By account and device: another account naming this id must not use up its share.
    const key = `${accountId}:${deviceId}`;
    const last = lastWrite.get(key);
    if (last !== undefined && at - last < DEVICE_MIN_INTERVAL_MS) throw rateLimited();
    const bucket = buckets.get(accountId) ?? { tokens: ACCOUNT_BURST, at };
    bucket.tokens = Math.min(ACCOUNT_BURST, bucket.tokens + ((at - bucket.at) / 1000) * ACCOUNT_RATE_PER_S);
    bucket.at = at;
    if (bucket.tokens < 1) throw rateLimited();
    bucket.tokens -= 1;
    remember(buckets, accountId, bucket);
    remember(lastWrite, key, at);
  };

  return {
    /** Stores the report as the device's latest; throws a DomainError (400, 409, 413, 429) for one it refuses. */
    async store(db: Db, accountId: number, raw: unknown): Promise<void> {
      const report = parseReport(raw);
      admit(accountId, report.deviceId);
      const { inserted } = await upsert(db, accountId, report, new Date(now()));
      if (inserted) await keepWithinBound(db, accountId, options.maxPerAccount);
    },

    /** As `store`, but answering the refusal instead of throwing it: for a report sent along with a push or on the socket. */
    async answer(db: Db, accountId: number, raw: unknown): Promise<DeviceReportAnswer> {
      try {
        await this.store(db, accountId, raw);
        return { status: 'stored' };
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        return { status: 'refused', code: error.code, message: error.message };
      }
    },
  };
}
export type DeviceReports = ReturnType<typeof createDeviceReports>;

const rateLimited = () =>
  new DomainError('rate_limited', 'Device reports come too often; the next one after a second is taken', undefined, undefined, 1);

function parseReport(raw: unknown): DeviceReport {
  // Measured as sent, whatever it holds: a report is small by design, its size decides before its shape.
  const bytes = Buffer.byteLength(JSON.stringify(raw) ?? '');
  if (bytes > DEVICE_REPORT_MAX_BYTES)
    throw new DomainError('payload_too_large', `A device report holds at most ${DEVICE_REPORT_MAX_BYTES} bytes, this one ${bytes}`);
  const parsed = DeviceReport.safeParse(raw);
  if (!parsed.success)
    throw validation(
      'Invalid device report',
      parsed.error.issues.map((issue) => ({ path: ['device', ...issue.path].join('.'), message: issue.message })),
    );
  return parsed.data;
}

async function upsert(db: Db, accountId: number, r: DeviceReport, at: Date): Promise<{ inserted: boolean }> {
  const row = {
    deviceId: r.deviceId,
    accountId,
    sdkVersion: r.sdkVersion,
    appName: r.appName,
    appVersion: r.appVersion,
    platform: r.platform,
    pendingCount: r.pendingCount,
    oldestPendingSince: r.oldestPending ? new Date(at.getTime() - r.oldestPending.ageMs) : null,
    oldestPendingType: r.oldestPending?.type ?? null,
    oldestPendingDeliveryId: r.oldestPending?.deliveryId ?? null,
    pendingCompletionCount: r.pendingCompletionCount,
    pendingCompletions: r.pendingCompletions.map((c) => ({
      delivery_id: c.deliveryId,
      completed_at: new Date(c.completedAt).toISOString(),
    })),
    rejectedCount: r.rejectedCount,
    outboxBytes: r.outboxBytes,
    attachmentBytes: r.attachmentBytes,
    lastPushAt: r.lastPushAt ? new Date(r.lastPushAt) : null,
    lastPullAt: r.lastPullAt ? new Date(r.lastPullAt) : null,
    lastErrorCode: r.lastErrorCode,
    firstSeenAt: at,
    lastSeenAt: at,
  };
  const { deviceId: _id, accountId: _account, firstSeenAt: _first, ...changed } = row;
  const set = Object.fromEntries(Object.keys(changed).map((key) => [key, sql.raw(`excluded.${columnOf(key)}`)]));
  const rows = await db
    .insert(devices)
    .values(row)
    .onConflictDoUpdate({ target: devices.deviceId, set, setWhere: sql`${devices.accountId} = ${accountId}` })
    .returning({ inserted: sql<boolean>`(xmax = 0)` });
  if (rows.length === 0) throw conflict('This device id is reported by another account; a device id is made once per device and account');
  return { inserted: rows[0].inserted };
}

const columnOf = (key: string) => (devices as unknown as Record<string, { name: string }>)[key].name;

/** Past the bound, the devices that hold no work and were seen longest ago go first. */
async function keepWithinBound(db: Db, accountId: number, max: number) {
  await db.execute(sql`
    DELETE FROM devices WHERE device_id IN (
      SELECT device_id FROM devices WHERE account_id = ${accountId}
      ORDER BY (pending_count > 0) DESC, last_seen_at DESC, device_id OFFSET ${max})`);
}

/** Drops the reports of devices not seen since `before`, in batches through the index on the time seen. */
export async function pruneDevices(db: Db, before: Date, batch = 10_000): Promise<number> {
  let deleted = 0;
  for (;;) {
    const result = await db.execute<{ n: number }>(sql`
      WITH gone AS (DELETE FROM devices WHERE device_id IN (
        SELECT device_id FROM devices WHERE last_seen_at < ${before.toISOString()}::timestamptz LIMIT ${batch}) RETURNING 1)
      SELECT count(*)::int AS n FROM gone`);
    const n = Number(result.rows[0].n);
    deleted += n;
    if (n < batch) return deleted;
  }
}
