import { sql, type Column, type SQL } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import type { Config } from '../../config.js';
import type { AppContext } from '../../context.js';
import { DomainError } from '../../errors.js';
import { ErpRefused } from '../../integrations/erp/gateway.js';

/** How long before attempt n+1 of a write-back (exponential, capped). */
export function backoffMs(attempts: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, attempts - 1));
}

/** The most of a failure's text kept for the back office. */
const ERROR_CHARS = 2000;

/**
 * What a failed write-back leaves: a refusal by the ERP (a 4xx other than 408 and 429) is
 * `rejected` and waits for an admin push, since it would be refused alike; anything else is
 * `failed` and tried again after the backoff.
 */
export function failedPush(error: unknown, attemptsBefore: number, erp: Config['erp']) {
  const message = (error instanceof Error ? error.message : String(error)).slice(0, ERROR_CHARS);
  if (error instanceof ErpRefused) return { status: 'rejected' as const, message, retryInMs: null };
  return { status: 'failed' as const, message, retryInMs: backoffMs(attemptsBefore + 1, erp.pushRetryBaseMs, erp.pushRetryMaxMs) };
}

/** The error a failed push answers with: the domain error as it was, anything else as an ERP failure. */
export const pushError = (error: unknown, what: string) =>
  error instanceof DomainError ? error : new DomainError('upstream_unavailable', `ERP ${what} failed: ${(error as Error).message}`);

/** The columns in which a write-back keeps its outcome (completions and erp_cancellations name them apart). */
export interface OutcomeColumns<T extends PgTable> {
  table: T;
  status: keyof T['$inferInsert'] & string;
  attempts: keyof T['$inferInsert'] & string;
  pushedAt: keyof T['$inferInsert'] & string;
  error: keyof T['$inferInsert'] & string;
  nextAttemptAt: keyof T['$inferInsert'] & string;
}

/**
 * Sends one write-back and records its outcome on the row `where` picks: succeeded, or the
 * failure with its text and when to try again. A failure is logged and rethrown as `pushError`.
 */
export async function sendRecorded<T extends PgTable>(
  deps: Pick<AppContext, 'database' | 'logger' | 'config'>,
  target: { columns: OutcomeColumns<T>; where: SQL; attemptsBefore: number; what: string; deliveryId: string },
  send: () => Promise<void>,
): Promise<void> {
  const { columns, where, deliveryId } = target;
  const attempts = sql`${(columns.table as unknown as Record<string, Column>)[columns.attempts]} + 1`;
  const record = (values: Record<string, unknown>) =>
    deps.database.db
      .update(columns.table as PgTable)
      .set({ [columns.attempts]: attempts, ...values })
      .where(where);
  try {
    await send();
  } catch (error) {
    const failure = failedPush(error, target.attemptsBefore, deps.config.erp);
    await record({
      [columns.status]: failure.status,
      [columns.error]: failure.message,
      [columns.nextAttemptAt]: failure.retryInMs === null ? null : new Date(Date.now() + failure.retryInMs),
    });
    deps.logger.warn({ deliveryId, err: error, status: failure.status, retryInMs: failure.retryInMs }, `ERP ${target.what} failed`);
    throw pushError(error, target.what);
  }
  await record({ [columns.status]: 'succeeded', [columns.pushedAt]: new Date(), [columns.error]: null, [columns.nextAttemptAt]: null });
}
