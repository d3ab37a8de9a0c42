import { eq, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import type { Db } from '../../db/client.js';
import { completions, deliveries, tours } from '../../db/schema.js';
import { DomainError, notFound } from '../../errors.js';
import { completionIdempotencyKey } from '../../integrations/erp/gateway.js';

type WriteBackDeps = Pick<AppContext, 'database' | 'erp' | 'logger' | 'config'>;

export function backoffMs(attempts: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, attempts - 1));
}

/** A completion with its delivery and tour. */
async function loadCompletionRecord(db: Db, deliveryId: string) {
  const [row] = await db
    .select({ completion: completions, delivery: deliveries, tour: tours })
    .from(completions)
    .innerJoin(deliveries, eq(deliveries.id, completions.deliveryId))
    .innerJoin(tours, eq(tours.id, deliveries.tourId))
    .where(eq(completions.deliveryId, deliveryId));
  return row;
}

/**
 * Writes the completion back to the ERP (delivered-at, state, payment term, money credit;
 * never line quantities) and records the outcome on the completion. A failure schedules the
 * next attempt with exponential backoff and is rethrown; the completion itself stays.
 */
export async function pushCompletion(deps: WriteBackDeps, deliveryId: string): Promise<void> {
  const db = deps.database.db;
  const record = await loadCompletionRecord(db, deliveryId);
  if (!record) throw notFound('Completed delivery');
  const { completion, delivery } = record;
  try {
    await deps.erp.pushCompletion(
      { belegartId: delivery.belegartId, belegnummer: delivery.belegnummer },
      {
        deliveredAt: completion.completedAt.toISOString(),
        state: 'completed',
        paymentTerm: delivery.paymentTerm,
        creditAmountCents: delivery.creditAmountCents ?? 0,
      },
      completionIdempotencyKey(completion.deliveryId),
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const delay = backoffMs(completion.erpPushAttempts + 1, deps.config.erp.pushRetryBaseMs, deps.config.erp.pushRetryMaxMs);
    await db
      .update(completions)
      .set({
        erpPushStatus: 'failed',
        erpPushAttempts: sql`${completions.erpPushAttempts} + 1`,
        erpPushError: message.slice(0, 2000),
        erpNextAttemptAt: new Date(Date.now() + delay),
      })
      .where(eq(completions.deliveryId, deliveryId));
    deps.logger.warn({ deliveryId, err: error, retryInMs: delay }, 'ERP write-back failed');
    throw error instanceof DomainError ? error : new DomainError('upstream_unavailable', `ERP write-back failed: ${message}`);
  }
  await db
    .update(completions)
    .set({
      erpPushStatus: 'succeeded',
      erpPushAttempts: sql`${completions.erpPushAttempts} + 1`,
      erpPushedAt: new Date(),
      erpPushError: null,
      // A report still missing keeps the follow-up scheduled.
      erpNextAttemptAt: sql`CASE WHEN ${completions.reportAttachmentId} IS NULL THEN now() + ${`${deps.config.erp.pushRetryBaseMs} milliseconds`}::interval END`,
    })
    .where(eq(completions.deliveryId, deliveryId));
}
