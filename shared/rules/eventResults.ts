import type { EventResult } from '../schemas/sync.js';

/**
 * Whether an event's result says no: a refusal, or a copy of a refused event, which answers
 * `duplicate` (the contract's answer to an id seen before) with the refusal's `code`. A copy of
 * an applied event carries no code.
 */
export const isRefusal = (result: Pick<EventResult, 'status' | 'code'>): boolean =>
  result.status === 'rejected' || (result.status === 'duplicate' && result.code !== undefined);

/**
 * The code a refused scan answers with, over /scans and /sync/push alike: the contract's scan
 * rejection code (quantity_exceeded, delivery_not_active, ...), which is the rule that refused it.
 */
export const scanRejectionCode = (result: Pick<EventResult, 'reason'>): string | undefined => result.reason;
