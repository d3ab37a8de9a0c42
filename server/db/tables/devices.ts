import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { personalnummer, ts } from './columns.js';

/** A pending completion as a device names it (snake_case, as stored). */
export interface StoredPendingCompletion {
  delivery_id: string;
  completed_at: string;
}

/**
 * The latest health report of each device (one row per device, upserted), for the back office.
 * The account is the token's that sent the report; a device unseen for a while keeps its row
 * until the retention (DEVICE_RETENTION_DAYS) drops it.
 */
export const devices = pgTable(
  'devices',
  {
    deviceId: uuid('device_id').primaryKey(),
    accountId: personalnummer('account_id').notNull(),
    sdkVersion: text('sdk_version').notNull(),
    appName: text('app_name'),
    appVersion: text('app_version'),
    platform: text('platform').notNull(),
    pendingCount: integer('pending_count').notNull(),
    // The report's time minus the age the device gave: its clock may be off, the service's is the one shown.
    oldestPendingSince: ts('oldest_pending_since'),
    oldestPendingType: text('oldest_pending_type'),
    oldestPendingDeliveryId: uuid('oldest_pending_delivery_id'),
    pendingCompletionCount: integer('pending_completion_count').notNull(),
    pendingCompletions: jsonb('pending_completions').$type<StoredPendingCompletion[]>().notNull(),
    rejectedCount: integer('rejected_count').notNull(),
    outboxBytes: bigint('outbox_bytes', { mode: 'number' }).notNull(),
    attachmentBytes: bigint('attachment_bytes', { mode: 'number' }).notNull(),
    lastPushAt: ts('last_push_at'),
    lastPullAt: ts('last_pull_at'),
    lastErrorCode: text('last_error_code'),
    firstSeenAt: ts('first_seen_at').notNull(),
    lastSeenAt: ts('last_seen_at').notNull(),
  },
  (t) => [
    index('devices_account_idx').on(t.accountId, t.deviceId),
    index('devices_last_seen_idx').on(t.lastSeenAt),
    // The tour read looks for devices of the tour's account that hold completions: few, and this finds them.
    index('devices_holding_idx')
      .on(t.accountId)
      .where(sql`${t.pendingCompletionCount} > 0`),
  ],
);
