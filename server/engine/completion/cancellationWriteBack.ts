import { eq, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { deliveries, erpCancellations } from '../../db/schema.js';
import { notFound } from '../../errors.js';
import { cancellationIdempotencyKey } from '../../integrations/erp/gateway.js';
import { sendRecorded } from './pushOutcome.js';

type Deps = Pick<AppContext, 'database' | 'erp' | 'logger' | 'config'>;

// A claimed cancellation is not picked again for this long, even when the claiming instance dies midway.
const CLAIM_LEASE_MS = 5 * 60_000;
const BATCH = 10;

/**
 * Writes a driver's cancellation back to the ERP (when, and why) and records the outcome, as a
 * completion's write-back does: a refusal waits for `POST /admin/push-cancellation`, any other
 * failure is tried again with backoff. Rethrows the failure.
 */
export async function pushCancellation(deps: Deps, deliveryId: string): Promise<void> {
  const db = deps.database.db;
  const [record] = await db
    .select({ cancellation: erpCancellations, belegartId: deliveries.belegartId, belegnummer: deliveries.belegnummer })
    .from(erpCancellations)
    .innerJoin(deliveries, eq(deliveries.id, erpCancellations.deliveryId))
    .where(eq(erpCancellations.deliveryId, deliveryId));
  if (!record) throw notFound('Canceled delivery');
  const { cancellation } = record;
  const columns = {
    table: erpCancellations,
    status: 'pushStatus',
    attempts: 'pushAttempts',
    pushedAt: 'pushedAt',
    error: 'pushError',
    nextAttemptAt: 'nextAttemptAt',
  } as const;
  const where = eq(erpCancellations.deliveryId, deliveryId);
  await sendRecorded(deps, { columns, where, attemptsBefore: cancellation.pushAttempts, what: 'cancellation write-back', deliveryId }, () =>
    deps.erp.pushCancellation(
      { belegartId: record.belegartId, belegnummer: record.belegnummer },
      { canceledAt: cancellation.canceledAt.toISOString(), state: 'canceled', reason: cancellation.reason },
      cancellationIdempotencyKey(deliveryId),
    ),
  );
}

/** Claims due cancellations (several instances never take the same one) and writes them back; returns how many ran. */
export async function runDueCancellations(deps: Deps): Promise<number> {
  const result = await deps.database.db.execute<{ delivery_id: string }>(sql`
    UPDATE erp_cancellations SET next_attempt_at = now() + ${`${CLAIM_LEASE_MS} milliseconds`}::interval
    WHERE delivery_id IN (
      SELECT delivery_id FROM erp_cancellations
      WHERE push_status IN ('pending', 'failed') AND coalesce(next_attempt_at, received_at) <= now()
      ORDER BY received_at LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
    RETURNING delivery_id`);
  for (const { delivery_id: deliveryId } of result.rows) await pushCancellation(deps, deliveryId).catch(() => undefined);
  return result.rows.length;
}
