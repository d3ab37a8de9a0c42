import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createDeviceReports } from '../../server/engine/deviceReports.js';
import { databaseKinds } from '../helpers/databases.js';
import { useTestServer } from '../helpers/server.js';

/** Above the clock's step, so that a second report comes within it. */
const REFRESH_MS = 2000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A report of a phone holding `pending` actions; `pulledAt` is one of the times that move on with every report. */
function report(deviceId: string, pending: number, pulledAt: number) {
  return {
    deviceId,
    sdkVersion: '1.4.0',
    appName: null,
    appVersion: null,
    platform: 'node',
    pendingCount: pending,
    oldestPending: null,
    pendingCompletionCount: 0,
    pendingCompletions: [],
    rejectedCount: 0,
    outboxBytes: 100 * pending,
    attachmentBytes: 0,
    lastPushAt: null,
    lastPullAt: new Date(pulledAt).toISOString(),
    lastErrorCode: null,
  };
}

describe.each(databaseKinds)('writing device reports on %s', (kind) => {
  const api = useTestServer(kind);
  // The service's clock for the rate cap (one report per device a second); the holding runs on real timers.
  let clock = Date.parse('2026-12-07T10:00:00Z');
  const tick = () => (clock += 1100);
  const stored = async (deviceId: string) => {
    const rows = await api.db.execute<{ pending_count: number; last_pull_at: string | Date }>(
      sql`SELECT pending_count, last_pull_at FROM devices WHERE device_id = ${deviceId}`,
    );
    const row = rows.rows[0];
    return row && { pending: Number(row.pending_count), pulledAt: new Date(row.last_pull_at).getTime() };
  };

  it('holds a report that moves only its times and writes it within the refresh; a change is written at once', async () => {
    const reports = createDeviceReports({ maxPerAccount: 10, now: () => clock, refreshMs: REFRESH_MS });
    const deviceId = randomUUID();
    await reports.store(api.db, 7101, report(deviceId, 2, tick()));
    const first = clock;
    expect(await stored(deviceId)).toEqual({ pending: 2, pulledAt: first });

    await reports.store(api.db, 7101, report(deviceId, 2, tick()));
    const repeated = clock;
    expect(await stored(deviceId)).toEqual({ pending: 2, pulledAt: first });
    await sleep(REFRESH_MS + 300);
    expect(await stored(deviceId)).toEqual({ pending: 2, pulledAt: repeated });

    await reports.store(api.db, 7101, report(deviceId, 0, tick()));
    expect(await stored(deviceId)).toEqual({ pending: 0, pulledAt: clock });
    await reports.close();
  });

  it('answers a report along with a push before its write, and writes what it holds when it closes', async () => {
    const reports = createDeviceReports({ maxPerAccount: 10, now: () => clock, refreshMs: 60_000 });
    const deviceId = randomUUID();
    await reports.store(api.db, 7102, report(deviceId, 1, tick()));
    // While a transaction holds the row, the write waits; the answer does not.
    let answered: unknown;
    await api.db.transaction(async (tx) => {
      await tx.execute(sql`SELECT 1 FROM devices WHERE device_id = ${deviceId} FOR UPDATE`);
      answered = await reports.answer(api.db, 7102, report(deviceId, 0, tick()), { behind: true });
    });
    expect(answered).toEqual({ status: 'stored' });
    await reports.close();
    expect(await stored(deviceId)).toMatchObject({ pending: 0 });

    await reports.store(api.db, 7102, report(deviceId, 0, tick()));
    const held = clock;
    expect(await stored(deviceId)).not.toEqual({ pending: 0, pulledAt: held });
    await reports.close();
    expect(await stored(deviceId)).toEqual({ pending: 0, pulledAt: held });
  });

  it('keeps a later report when an earlier one is written after it', async () => {
    const later = createDeviceReports({ maxPerAccount: 10, now: () => clock });
    const earlier = createDeviceReports({ maxPerAccount: 10, now: () => clock - 60_000 });
    const deviceId = randomUUID();
    await later.store(api.db, 7103, report(deviceId, 0, tick()));
    await earlier.store(api.db, 7103, report(deviceId, 3, clock));
    expect(await stored(deviceId)).toMatchObject({ pending: 0 });
    await expect(createDeviceReports({ maxPerAccount: 10 }).store(api.db, 7104, report(deviceId, 0, tick()))).rejects.toMatchObject({
      code: 'conflict',
    });
  });
});
