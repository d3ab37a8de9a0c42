import type { Config } from '../../config.js';
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
