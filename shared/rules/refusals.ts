import type { ErrorCode } from '../schemas/common.js';
import type { AuditAction, DeliveryState } from '../schemas/deliveries.js';
import type { ServiceKind } from '../schemas/masterData.js';
import { acceptsWork, nextDeliveryState, reasonProblem, type DeliveryOperation } from './delivery.js';
import { completionProblem, type CompletionGateInput } from './completion.js';
import { applyItemAction, type ItemSnapshot } from './items.js';
import { creditProblems, paymentProblem } from './money.js';
import { INTERNAL_NOTE_MAX, internalNote, noteHasContent } from './notes.js';
import { serviceValueProblem } from './services.js';

export interface FieldProblem {
  path: string;
  message: string;
}

/**
 * A driver action refused by a rule, as the service answers it: the error code, the rule that
 * refused it (`reason`), the message and the fields that broke it. The service builds its
 * refusals here, and the SDK its verdicts before queueing, so both say the same.
 */
export interface Refusal {
  code: ErrorCode;
  reason: string;
  message: string;
  errors?: FieldProblem[];
}

export const refusal = (code: ErrorCode, reason: string, message: string, errors?: FieldProblem[]): Refusal => ({
  code,
  reason,
  message,
  ...(errors && { errors }),
});
const invalid = (message: string, reason: string, errors?: FieldProblem[]) => refusal('validation', reason, message, errors);

/** Credit, payment, scans and service values need an active delivery. */
export const workRefusal = (state: DeliveryState): Refusal | null =>
  acceptsWork(state) ? null : refusal('invalid_state_transition', 'delivery_not_active', `The delivery is ${state}, not active`);

/** Hold, resume and cancel: the state first (whatever the event carries), then the reason. */
export function transitionRefusal(state: DeliveryState, operation: DeliveryOperation, reason: string | null): Refusal | null {
  if (!nextDeliveryState(state, operation))
    return refusal('invalid_state_transition', 'invalid_state_transition', `Cannot ${operation} a delivery that is ${state}`);
  const problem = reason === null ? null : reasonProblem(reason);
  return problem ? invalid(`A reason to ${operation} is required`, 'validation', [problem]) : null;
}

// Scan refusals that concern the state of a line rather than the request.
const lineStateReasons = new Set(['item_removed', 'invalid_action']);

/** One audit action on a line: its next snapshot, or the refusal. */
export function itemVerdict(
  item: ItemSnapshot,
  action: AuditAction,
  quantity?: number,
): { ok: true; item: ItemSnapshot } | { ok: false; refusal: Refusal } {
  const outcome = applyItemAction(item, action, quantity);
  if (outcome.ok) return outcome;
  const code = lineStateReasons.has(outcome.code) ? 'invalid_state_transition' : 'validation';
  return { ok: false, refusal: refusal(code, outcome.code, outcome.message) };
}

/** A money credit set (amount and reason) or removed (only an existing one). */
export function creditRefusal(
  credit: { action: 'set' | 'remove'; amountCents?: number; reason?: string },
  hasCredit: boolean,
): Refusal | null {
  if (credit.action === 'remove') return hasCredit ? null : invalid('There is no money credit to remove', 'no_credit');
  const problems = creditProblems(credit.amountCents, credit.reason);
  return problems.length ? invalid(problems.map((p) => `${p.path} ${p.message}`).join('; '), 'invalid_credit', problems) : null;
}

export function paymentRefusal(input: Parameters<typeof paymentProblem>[0]): Refusal | null {
  const problem = paymentProblem(input);
  if (!problem) return null;
  return invalid(problem.message, problem.code, problem.path ? [{ path: problem.path, message: problem.message }] : undefined);
}

export const noteContentRefusal = (note: { text?: string | null; imageAttachment?: string | null }): Refusal | null =>
  noteHasContent(note) ? null : invalid('A note needs text or an image', 'note_without_content');

/** A note's credit line must be a line of its delivery. */
export const noteLineRefusal = (): Refusal =>
  invalid('creditDeliveryItemId is not a line of this delivery', 'validation', [
    { path: 'creditDeliveryItemId', message: 'is not a line of this delivery' },
  ]);

/** A service value: on an active delivery, for an active service, of its kind and within its limits. */
export function serviceValueRefusal(
  state: DeliveryState,
  service: { active: boolean; kind: ServiceKind; minValue: number | null; maxValue: number | null },
  value: { boolValue?: boolean | null; numericValue?: number | null },
): Refusal | null {
  const work = workRefusal(state);
  if (work) return work;
  if (!service.active) return invalid('The service is inactive', 'service_inactive');
  const problem = serviceValueProblem(service, value);
  return problem ? invalid(`${problem.path} ${problem.message}`, 'invalid_service_value', [problem]) : null;
}

export const carInactiveRefusal = (): Refusal => invalid('The car is inactive', 'car_inactive');

export type SignaturePart = 'customer_signature' | 'driver_signature';

/** A completion's signature sent empty or not at all; the service checks first that each is a PNG. */
export const missingSignatureRefusal = (part: SignaturePart): Refusal =>
  invalid(`Missing signature: ${part}`, 'missing_signature', [{ path: part, message: 'a PNG image is required' }]);

/** A completion's internal note longer than the limit; checked before anything else of the completion. */
export const internalNoteRefusal = (value: string | null | undefined): Refusal | null =>
  internalNote(value) === undefined
    ? invalid(`The internal note has more than ${INTERNAL_NOTE_MAX} characters`, 'internal_note_too_long', [
        { path: 'acknowledgements.internalNote', message: `at most ${INTERNAL_NOTE_MAX} characters` },
      ])
    : null;

/**
 * The completion gates in the spec's order (completionProblem). A payment method chosen at
 * completion that does not exist or is inactive is a payment problem: it comes after the gates
 * before the payment gate.
 */
export function completionRefusal(input: CompletionGateInput & { chosenMethodInvalid: boolean }): Refusal | null {
  const problem = completionProblem(input);
  if (problem && problem.reason !== 'payment_not_collected') return problem;
  if (input.chosenMethodInvalid) {
    return invalid('The payment method does not exist or is inactive', 'payment_method_invalid', [
      { path: 'acknowledgements.paymentMethodId', message: 'unknown or inactive payment method' },
    ]);
  }
  return problem;
}
