import { z } from 'zod';
import { PageFields } from './admin.js';
import { ErpNumber, INT32_MAX, textParameter, Timestamp, Uuid } from './common.js';

/**
 * Device sync health: what a phone's SDK reports about its unsent work, and what the back
 * office reads of it. A report names actions by type and delivery only, never their content.
 */

/** The largest report the service takes (its JSON, in bytes); a larger one is refused whole. */
export const DEVICE_REPORT_MAX_BYTES = 8 * 1024;
/** The most pending completions a report names one by one; `pendingCompletionCount` counts them all. */
export const DEVICE_REPORT_MAX_COMPLETIONS = 50;

const Count = z.number().int().min(0).max(INT32_MAX);
const Bytes = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const Label = (max: number) => z.string().trim().min(1).max(max);
/** An action's type as the outbox names it: a sync event type, `delivery.complete` or `note.image`. */
const ActionType = z.string().regex(/^[a-zA-Z.]{1,40}$/, 'expected an action type such as delivery.complete');

export const DeviceReport = z
  .object({
    deviceId: Uuid.meta({ description: 'Random, made once by the SDK and kept in its storage' }),
    sdkVersion: Label(40),
    appName: Label(100).nullable(),
    appVersion: Label(40).nullable(),
    platform: Label(40).meta({ description: 'web, react-native, node, ...' }),
    pendingCount: Count.meta({ description: 'Actions not yet answered by the service' }),
    oldestPending: z
      .object({
        ageMs: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
        type: ActionType,
        deliveryId: Uuid.nullable(),
      })
      .nullable()
      .meta({ description: 'The action that has waited longest: how long (by the device clock), its type and delivery' }),
    pendingCompletionCount: Count,
    pendingCompletions: z
      .array(z.object({ deliveryId: Uuid, completedAt: Timestamp.meta({ description: 'When the driver completed it (device clock)' }) }))
      .max(DEVICE_REPORT_MAX_COMPLETIONS),
    rejectedCount: Count.meta({ description: 'Refused actions the app has not dismissed yet' }),
    outboxBytes: Bytes,
    attachmentBytes: Bytes,
    lastPushAt: Timestamp.nullable(),
    lastPullAt: Timestamp.nullable(),
    lastErrorCode: Label(60).nullable(),
  })
  .superRefine((report, ctx) => {
    if (report.pendingCompletions.length > report.pendingCompletionCount)
      ctx.addIssue({ code: 'custom', path: ['pendingCompletionCount'], message: 'less than the completions named' });
    if (report.pendingCompletionCount > report.pendingCount)
      ctx.addIssue({ code: 'custom', path: ['pendingCompletionCount'], message: 'more than pendingCount' });
  })
  .meta({ id: 'DeviceReport' });
export type DeviceReport = z.output<typeof DeviceReport>;

/** Whether the service kept a report; `refused` changes nothing (the code says why: validation, conflict, rate_limited). */
export const DeviceReportAnswer = z
  .object({ status: z.enum(['stored', 'refused']), code: z.string().optional(), message: z.string().optional() })
  .meta({ id: 'DeviceReportAnswer' });
export type DeviceReportAnswer = z.infer<typeof DeviceReportAnswer>;

// ---------- back office (snake_case) ----------

const minutes = (what: string) =>
  z
    .string()
    .regex(/^\d{1,7}$/, 'expected a whole number of minutes')
    .transform(Number)
    .optional()
    .meta(textParameter({ type: 'integer', minimum: 0, description: what }));
/** Absent: no filter; true or 1: only those that do; false or 0: only those that do not. */
const flag = (what: string) =>
  z
    .string()
    .toLowerCase()
    .pipe(z.enum(['true', 'false', '1', '0']))
    .transform((v) => v === 'true' || v === '1')
    .optional()
    .meta(textParameter({ type: 'boolean', description: `${what}: true or 1, false or 0 for the others; absent: all` }));

export const AdminDevicesQuery = z.object({
  account: z
    .string()
    .regex(/^\d{1,15}$/, 'expected a Personalnummer')
    .transform(Number)
    .optional()
    .meta(textParameter({ type: 'integer', format: 'int64', description: 'Only the devices of this account' })),
  stale_for_more_than_minutes: minutes('Only devices whose last report is older than this'),
  pending_older_than_minutes: minutes('Only devices whose oldest unsent action has waited longer than this (0: any pending)'),
  holds_completions: flag('Devices holding unsent completions'),
  has_refusals: flag('Devices with refused actions not dismissed'),
  sdk_version: z.string().min(1).max(40).optional(),
  app_version: z.string().min(1).max(40).optional(),
  ...PageFields,
});

export const AdminPendingCompletion = z
  .object({
    delivery_id: Uuid,
    belegnummer: z.string().nullable().meta({ description: "Null when the delivery is not one of the device account's tours" }),
    completed_at: Timestamp,
  })
  .meta({ id: 'AdminPendingCompletion' });

export const AdminDevice = z
  .object({
    device_id: Uuid,
    account_id: ErpNumber,
    sdk_version: z.string(),
    app_name: z.string().nullable(),
    app_version: z.string().nullable(),
    platform: z.string(),
    pending_count: z.number().int(),
    oldest_pending: z
      .object({ since: Timestamp, type: z.string(), delivery_id: Uuid.nullable() })
      .nullable()
      .meta({ description: 'Since when (report time minus its age) the oldest unsent action waits, its type and delivery' }),
    pending_completion_count: z.number().int(),
    pending_completions: z.array(AdminPendingCompletion),
    rejected_count: z.number().int(),
    outbox_bytes: z.number().int(),
    attachment_bytes: z.number().int(),
    last_push_at: Timestamp.nullable(),
    last_pull_at: Timestamp.nullable(),
    last_error_code: z.string().nullable(),
    first_seen_at: Timestamp,
    last_seen_at: Timestamp.meta({ description: 'When the latest report arrived; a device unseen since keeps it' }),
  })
  .meta({ id: 'AdminDevice' });
export type AdminDevice = z.infer<typeof AdminDevice>;

export const AdminDevicesResponse = z
  .object({
    count: z.number().int().min(0).meta({ description: 'Devices in this answer (the page)' }),
    devices: z.array(AdminDevice).meta({ description: 'By account, then device id' }),
  })
  .meta({ id: 'AdminDevicesResponse' });
export type AdminDevicesResponse = z.infer<typeof AdminDevicesResponse>;
