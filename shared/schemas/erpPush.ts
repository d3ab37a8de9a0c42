import { z } from 'zod';
import { Timestamp } from './common.js';

/** Where a write-back to the ERP stands (docs/erp-integration.md, "Answers to a write-back"). */
export const AdminErpPush = z.object({
  status: z.enum(['pending', 'succeeded', 'failed', 'rejected']),
  attempts: z.number().int(),
  pushed_at: Timestamp.nullable(),
  error: z.string().nullable(),
  next_attempt_at: Timestamp.nullable(),
});

/** A driver's cancellation and its write-back to the ERP (sent with ERP_PUSH_CANCELLATIONS). */
export const AdminCancellation = z
  .object({ canceled_at: Timestamp, reason: z.string(), erp_push: AdminErpPush })
  .meta({ id: 'AdminCancellation' });
