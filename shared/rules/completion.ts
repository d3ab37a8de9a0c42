import type { DeliveryState, ItemState } from '../schemas/deliveries.js';
import { nextDeliveryState } from './delivery.js';
import { isFinished } from './items.js';

export interface CompletionGateInput {
  state: DeliveryState;
  positions: { id: string; lineNumber: number; state: ItemState; scannable: boolean }[];
  noteCount: number;
  acknowledgements: { receiptConfirmed: boolean; notesAcknowledged?: boolean; paymentCollected?: boolean };
  openAmountCents: number;
  /** Amount of the latest logged payment, if any. */
  latestPaymentCents: number | null;
  /** The method in effect: the one chosen at completion, else the delivery's. */
  method: { name: string; collectOnSite: boolean } | null;
}

export interface CompletionProblem {
  code: 'invalid_state_transition' | 'validation';
  reason: 'not_active' | 'open_scans' | 'notes_not_acknowledged' | 'receipt_not_confirmed' | 'payment_not_collected';
  message: string;
  errors: { path: string; message: string }[];
}

/** How far back a device's completion time is believed; a clock further off falls back to the service's. */
export const COMPLETION_TIME_MAX_AGE_MS = 7 * 24 * 3600_000;

/**
 * When a delivery counts as completed: when the driver completed it on the device (the outbox may
 * send it hours later), unless a working clock cannot have shown that time: ahead of now, before
 * the delivery existed (`notBefore`), or more than a week back.
 */
export function completionTime(occurredAt: string | undefined, now: Date, notBefore: Date): Date {
  const device = occurredAt === undefined ? undefined : new Date(occurredAt);
  const plausible = device && device <= now && device >= notBefore && now.getTime() - device.getTime() <= COMPLETION_TIME_MAX_AGE_MS;
  return plausible ? device : now;
}

/** How the payment duty is met: by a logged payment, by the legacy on-site confirmation, or not needed. */
export type PaymentSettlement = 'none_open' | 'logged_payment' | 'collected_on_site' | 'not_collected_on_site';

export function paymentSettlement(
  input: Pick<CompletionGateInput, 'openAmountCents' | 'latestPaymentCents' | 'method'>,
): PaymentSettlement {
  if (input.openAmountCents <= 0) return 'none_open';
  if (input.latestPaymentCents === input.openAmountCents) return 'logged_payment';
  return input.method?.collectOnSite ? 'collected_on_site' : 'not_collected_on_site';
}

/**
 * The completion gates in the spec's order: active; every scannable position finished; notes
 * acknowledged when notes exist; receipt confirmed; the payment duty met. The first that fails
 * is the answer; null when the delivery may be completed.
 */
export function completionProblem(input: CompletionGateInput): CompletionProblem | null {
  if (!nextDeliveryState(input.state, 'complete')) {
    return { code: 'invalid_state_transition', reason: 'not_active', message: `A ${input.state} delivery cannot be completed`, errors: [] };
  }
  const open = input.positions.filter((p) => !isFinished(p));
  if (open.length) {
    return {
      code: 'validation',
      reason: 'open_scans',
      message: 'Open scans: every scannable position must be Done or Removed',
      errors: open.map((p) => ({ path: `positions.${p.id}`, message: `line ${p.lineNumber} is ${p.state}` })),
    };
  }
  const ack = input.acknowledgements;
  if (input.noteCount > 0 && ack.notesAcknowledged !== true) {
    return {
      code: 'validation',
      reason: 'notes_not_acknowledged',
      message: 'Unacknowledged notes: the delivery has notes, acknowledge them first',
      errors: [{ path: 'acknowledgements.notesAcknowledged', message: 'must be true when the delivery has notes' }],
    };
  }
  if (ack.receiptConfirmed !== true) {
    return {
      code: 'validation',
      reason: 'receipt_not_confirmed',
      message: 'The receipt must be confirmed',
      errors: [{ path: 'acknowledgements.receiptConfirmed', message: 'must be true' }],
    };
  }
  if (paymentSettlement(input) === 'collected_on_site' && ack.paymentCollected !== true) {
    return {
      code: 'validation',
      reason: 'payment_not_collected',
      message: `Payment: ${input.openAmountCents} cents are open and ${input.method!.name} is collected on site; log the payment or confirm paymentCollected`,
      errors: [{ path: 'acknowledgements.paymentCollected', message: 'must be true for an on-site payment method with an open amount' }],
    };
  }
  return null;
}
