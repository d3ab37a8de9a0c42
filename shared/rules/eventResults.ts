import type { EventResult } from '../schemas/sync.js';

/**
 * Whether an event's result says no: a refusal, or a copy of a refused event, which answers
 * `duplicate` (the contract's answer to an id seen before) with the refusal's `code`. A copy of
 * an applied event carries no code.
 */
export const isRefusal = (result: Pick<EventResult, 'status' | 'code'>): boolean =>
  result.status === 'rejected' || (result.status === 'duplicate' && result.code !== undefined);
