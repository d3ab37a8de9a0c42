import type { DeliveryState } from '../schemas/deliveries.js';

export type DeliveryOperation = 'hold' | 'resume' | 'cancel' | 'complete';

const transitions: Record<DeliveryOperation, Partial<Record<DeliveryState, DeliveryState>>> = {
  hold: { active: 'held' },
  resume: { held: 'active' },
  cancel: { active: 'canceled', held: 'canceled' },
  complete: { active: 'completed' },
};

/** The next state, or null when the operation is not allowed from `state`. */
export function nextDeliveryState(state: DeliveryState, operation: DeliveryOperation): DeliveryState | null {
  return transitions[operation][state] ?? null;
}

/** Hold and cancel need a reason that is not blank. */
export const reasonProblem = (reason: string): { path: 'reason'; message: string } | null =>
  reason.trim() ? null : { path: 'reason', message: 'must not be empty' };

/** Credit, payment and service values change only an active delivery. */
export const acceptsWork = (state: DeliveryState) => state === 'active';
