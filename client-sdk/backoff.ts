export interface BackoffPolicy {
  /** Delay before the first retry, before jitter. */
  baseMs: number;
  capMs: number;
  /** Upper bound for a server's `Retry-After`. */
  maxRetryAfterMs: number;
}

export const defaultBackoff: BackoffPolicy = { baseMs: 1000, capMs: 60_000, maxRetryAfterMs: 10 * 60_000 };

/**
 * Exponential backoff with "equal jitter": half the exponential delay is fixed, half random, so
 * retries of many phones after an outage spread out but none retries at once. A server's
 * Retry-After wins when it asks for more.
 */
export function backoffDelay(attempt: number, random: () => number, policy: BackoffPolicy = defaultBackoff, retryAfterMs?: number): number {
  const exponential = Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, attempt));
  const jittered = exponential / 2 + random() * (exponential / 2);
  if (retryAfterMs === undefined) return Math.round(jittered);
  return Math.round(Math.min(policy.maxRetryAfterMs, Math.max(retryAfterMs, jittered)));
}
