export const CREDIT_STEP_CENTS = 1000;
export const CREDIT_MAX_CENTS = 15000;

/** A money credit: 0 < amount <= 150 euro in steps of 10 euro, with a reason. Returns the problems. */
export function creditProblems(amountCents: number | undefined, reason: string | undefined): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  if (
    amountCents === undefined ||
    !Number.isInteger(amountCents) ||
    amountCents <= 0 ||
    amountCents > CREDIT_MAX_CENTS ||
    amountCents % CREDIT_STEP_CENTS !== 0
  ) {
    problems.push({
      path: 'amountCents',
      message: `must be a multiple of ${CREDIT_STEP_CENTS} between ${CREDIT_STEP_CENTS} and ${CREDIT_MAX_CENTS}`,
    });
  }
  if (!reason?.trim()) problems.push({ path: 'reason', message: 'must not be empty' });
  return problems;
}

export type PaymentRejection = 'method_invalid' | 'no_open_amount' | 'amount_differs';

/** A payment may be logged only for an active method and exactly the open amount, which must be above 0. */
export function paymentProblem(input: {
  methodActive: boolean;
  openAmountCents: number;
  expectedAmountCents: number;
}): { code: PaymentRejection; message: string; path?: 'paymentMethodId' | 'expectedAmountCents' } | null {
  if (!input.methodActive)
    return { code: 'method_invalid', message: 'The payment method does not exist or is inactive', path: 'paymentMethodId' };
  if (input.openAmountCents <= 0) return { code: 'no_open_amount', message: 'Nothing is open on this delivery' };
  if (input.openAmountCents !== input.expectedAmountCents) {
    return {
      code: 'amount_differs',
      message: `The open amount is ${input.openAmountCents} cents, not ${input.expectedAmountCents}`,
      path: 'expectedAmountCents',
    };
  }
  return null;
}
