import { sql } from 'drizzle-orm';
import { DEVICE_REPORT_MAX_BYTES, DeviceReport, type DeviceReportAnswer } from '../../shared/schemas/devices.js';
import { executePrepared, type Db } from '../db/client.js';
import { combining, deferred } from '../db/combining.js';
import { conflict, DomainError, validation } from '../errors.js';

/** How often one device's report is written at most, and how many reports one account's devices send per second on average (and at once). */
const DEVICE_MIN_INTERVAL_MS = 1000;
const ACCOUNT_RATE_PER_S = 20;
const ACCOUNT_BURST = 60;
/** Devices and accounts the rate cap and the coalescing remember at most; past this the oldest go first. */
const TRACKED = 20_000;
/**
 * A report that changes only times and byte counts (columns below) is held and written at most
 * this long after the device's last write: those columns may lag by this much, the rest never.
 */
export const DEVICE_REFRESH_MS = 30_000;
const DRIFTING = new Set([
  'oldest_pending_since',
  'outbox_bytes',
  'attachment_bytes',
  'last_push_at',
  'last_pull_at',
  'first_seen_at',
  'last_seen_at',
]);

export interface DeviceReportOptions {
  /** The most devices kept per account: a new one past it pushes out the one that holds no work and was seen longest ago. */
  maxPerAccount: number;
  now?: () => number;
  /** DEVICE_REFRESH_MS unless given. */
  refreshMs?: number;
  /** A report taken but not written (the database failed); it is kept and written again at the next flush. */
  onWriteFailure?: (error: unknown, deviceId: string) => void;
}

/**
 * Keeps the latest health report of each device. The account is the caller's (its token),
 * never the report's; a device id another account reported is refused (409), so no report can
 * change another account's device. A report is checked on its own and capped in rate
 * (one write per device per second, a bucket per account), so a bad or flooding one costs a
 * push nothing but its refusal. Reports arriving together are written in one statement.
 *
 * Most reports repeat the last one but for its times: such a report is held (the latest per
 * device) and written DEVICE_REFRESH_MS after the device's last write, so a phone pushing every
 * second costs one write a half minute; one that says something new (pending work, completions,
 * refusals, versions, error) is written at once. A push does not wait for the write, except for
 * a device's first report in this process, whose answer may be a conflict.
 */
export function createDeviceReports(options: DeviceReportOptions) {
  const now = options.now ?? Date.now;
  const refreshMs = options.refreshMs ?? DEVICE_REFRESH_MS;
  // One statement at a time; reports arriving meanwhile go together in the next.
  const write = combining<Waiting>({ concurrency: 1, maxItems: 500 }, writeBatch);
  const lastWrite = new Map<string, number>();
  const buckets = new Map<number, { tokens: number; at: number }>();
  /** Per account and device: what its last written report said (but for its times), and when. */
  const written = new Map<string, { said: string; at: number }>();
  /** Per account and device: its latest report not written yet. */
  const held = new Map<string, { db: Db; row: Row }>();
  const writing = new Set<Promise<unknown>>();
  let flushTimer: NodeJS.Timeout | undefined;
  const remember = <K, V>(map: Map<K, V>, key: K, value: V) => {
    map.delete(key);
    if (map.size >= TRACKED) map.delete(map.keys().next().value!);
    map.set(key, value);
  };

  /** Refuses a report the rate cap does not let through now; takes its share when it does. */
  const admit = (accountId: number, deviceId: string, at: number) => {
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

  const writeRow = (db: Db, row: Row) => {
    const settle = deferred<Written>();
    write({ db, row, settle });
    writing.add(settle.promise);
    void settle.promise.then(
      () => writing.delete(settle.promise),
      () => writing.delete(settle.promise),
    );
    return settle.promise;
  };

  /** Written behind the caller's back: a failure keeps the report (unless a newer one waits) for the next flush. */
  const writeBehind = (key: string, db: Db, row: Row) => {
    writeRow(db, row).then(
      (result) => {
        if (result === 'conflict') written.delete(key);
      },
      (error: unknown) => {
        written.delete(key);
        if (!held.has(key)) hold(key, db, row);
        options.onWriteFailure?.(error, row.device_id as string);
      },
    );
  };

  const flush = () => {
    clearTimeout(flushTimer);
    flushTimer = undefined;
    for (const [key, { db, row }] of held) {
      remember(written, key, { said: saidOf(row), at: now() });
      writeBehind(key, db, row);
    }
    held.clear();
  };

  const hold = (key: string, db: Db, row: Row) => {
    remember(held, key, { db, row });
    flushTimer ??= setTimeout(flush, refreshMs).unref();
  };

  return {
    /**
     * Takes the report as the device's latest; throws a DomainError (400, 409, 413, 429) for one
     * it refuses. With `behind`, returns before the write (but for the device's first report here).
     */
    async store(db: Db, accountId: number, raw: unknown, { behind = false } = {}): Promise<void> {
      const report = parseReport(raw);
      const at = now();
      admit(accountId, report.deviceId, at);
      const key = `${accountId}:${report.deviceId}`;
      const row = rowOf(accountId, report, new Date(at));
      const said = saidOf(row);
      const last = written.get(key);
      if (last && last.said === said && at - last.at < refreshMs) return hold(key, db, row);
      held.delete(key);
      remember(written, key, { said, at });
      if (last && behind) return writeBehind(key, db, row);
      const result = await writeRow(db, row).catch((error: unknown) => {
        written.delete(key);
        throw error;
      });
      if (result === 'conflict') {
        written.delete(key);
        throw conflict('This device id is reported by another account; a device id is made once per device and account');
      }
      if (result === 'inserted') await keepWithinBound(db, accountId, options.maxPerAccount);
    },

    /** As `store`, but answering the refusal instead of throwing it: for a report sent along with a push or on the socket. */
    async answer(db: Db, accountId: number, raw: unknown, options: { behind?: boolean } = {}): Promise<DeviceReportAnswer> {
      try {
        await this.store(db, accountId, raw, options);
        return { status: 'stored' };
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        return { status: 'refused', code: error.code, message: error.message };
      }
    },

    /** Writes the reports held and waits for every write under way (the service stops). */
    async close(): Promise<void> {
      flush();
      while (writing.size) await Promise.allSettled([...writing]);
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

/** The columns of a report's row, with their types for reading them out of the batch's JSON. */
const COLUMNS = {
  device_id: 'uuid',
  account_id: 'bigint',
  sdk_version: 'text',
  app_name: 'text',
  app_version: 'text',
  platform: 'text',
  pending_count: 'int',
  oldest_pending_since: 'timestamptz',
  oldest_pending_type: 'text',
  oldest_pending_delivery_id: 'uuid',
  pending_completion_count: 'int',
  pending_completions: 'jsonb',
  rejected_count: 'int',
  outbox_bytes: 'bigint',
  attachment_bytes: 'bigint',
  last_push_at: 'timestamptz',
  last_pull_at: 'timestamptz',
  last_error_code: 'text',
  first_seen_at: 'timestamptz',
  last_seen_at: 'timestamptz',
} as const;
type Row = Record<keyof typeof COLUMNS, unknown>;
const KEPT_ON_UPDATE = new Set(['device_id', 'account_id', 'first_seen_at']);

/** What a report says but for its times and byte counts: a change of it is written at once. */
const saidOf = (row: Row) => JSON.stringify(Object.entries(row).filter(([column]) => !DRIFTING.has(column)));

/**
 * The rows of a batch in one prepared statement of one parameter (their JSON): the reports that
 * arrive together cost one statement. Another account's row is left alone and answers no row; so
 * is a row written from a later report (a held one written late, or another instance's).
 */
const upsertStatement = () => {
  const names = Object.keys(COLUMNS);
  const types = Object.entries(COLUMNS).map(([name, type]) => `${name} ${type}`);
  const updated = names.filter((c) => !KEPT_ON_UPDATE.has(c)).map((c) => `${c} = excluded.${c}`);
  return sql`INSERT INTO devices (${sql.raw(names.join(', '))})
    SELECT ${sql.raw(names.join(', '))} FROM jsonb_to_recordset(${sql.placeholder('rows')}::jsonb) AS r(${sql.raw(types.join(', '))})
    ON CONFLICT (device_id) DO UPDATE SET ${sql.raw(updated.join(', '))} WHERE devices.account_id = excluded.account_id AND devices.last_seen_at <= excluded.last_seen_at
    RETURNING device_id, (xmax = 0) AS inserted`;
};

function rowOf(accountId: number, r: DeviceReport, at: Date): Row {
  const iso = (instant: string | null) => (instant === null ? null : new Date(instant).toISOString());
  return {
    device_id: r.deviceId,
    account_id: accountId,
    sdk_version: r.sdkVersion,
    app_name: r.appName,
    app_version: r.appVersion,
    platform: r.platform,
    pending_count: r.pendingCount,
    oldest_pending_since: r.oldestPending ? new Date(at.getTime() - r.oldestPending.ageMs).toISOString() : null,
    oldest_pending_type: r.oldestPending?.type ?? null,
    oldest_pending_delivery_id: r.oldestPending?.deliveryId ?? null,
    pending_completion_count: r.pendingCompletionCount,
    pending_completions: r.pendingCompletions.map((c) => ({ delivery_id: c.deliveryId, completed_at: iso(c.completedAt) })),
    rejected_count: r.rejectedCount,
    outbox_bytes: r.outboxBytes,
    attachment_bytes: r.attachmentBytes,
    last_push_at: iso(r.lastPushAt),
    last_pull_at: iso(r.lastPullAt),
    last_error_code: r.lastErrorCode,
    first_seen_at: at.toISOString(),
    last_seen_at: at.toISOString(),
  };
}

type Written = 'inserted' | 'updated' | 'conflict';
type Waiting = { db: Db; row: Row; settle: ReturnType<typeof deferred<Written>> };

/**
 * Writes the rows given, one statement for those of distinct devices (a statement may touch a
 * row once), then the rest; answers each whether it was inserted, updated, or refused as another
 * account's device.
 */
async function writeBatch(items: Waiting[]) {
  let rest = items;
  while (rest.length) {
    const seen = new Set<unknown>();
    const now = rest.filter((item) => !seen.has(item.row.device_id) && seen.add(item.row.device_id));
    rest = rest.filter((item) => !now.includes(item));
    try {
      const rows = await executePrepared<{ device_id: string; inserted: boolean }>(items[0].db, 'device_upsert', upsertStatement, {
        rows: JSON.stringify(now.map((item) => item.row)),
      });
      const written = new Map(rows.map((r) => [r.device_id, r.inserted]));
      const foreign = await foreignDevices(
        items[0].db,
        now.filter((item) => !written.has(item.row.device_id as string)),
      );
      for (const item of now) {
        const inserted = written.get(item.row.device_id as string);
        item.settle.resolve(inserted === undefined ? (foreign.has(item) ? 'conflict' : 'updated') : inserted ? 'inserted' : 'updated');
      }
    } catch (error) {
      for (const item of now) item.settle.reject(error);
    }
  }
}

/** Of the items whose row was left alone, those whose device is another account's (the others had a later report). */
async function foreignDevices(db: Db, items: Waiting[]): Promise<Set<Waiting>> {
  if (items.length === 0) return new Set();
  const ids = items.map((item) => item.row.device_id as string);
  const rows = await db.execute<{ device_id: string; account_id: string }>(
    sql`SELECT device_id, account_id FROM devices WHERE device_id IN (${sql.join(
      ids.map((id) => sql`${id}::uuid`),
      sql`, `,
    )})`,
  );
  const owner = new Map(rows.rows.map((r) => [r.device_id, Number(r.account_id)]));
  return new Set(
    items.filter((item) => {
      const account = owner.get(item.row.device_id as string);
      return account !== undefined && account !== item.row.account_id;
    }),
  );
}

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
