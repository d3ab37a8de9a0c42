/** What the open amount depends on: the ERP's amount, the active money credit, and each line's credits. */
export interface OpenAmountInput {
  erpOpenAmountCents: number;
  creditAmountCents: number | null;
  positions: { state: string; requiredQuantity: number; creditedQuantity: number; unitPriceCents: number | null }[];
}

/**
 * The open amount: the ERP's open amount minus the active money credit minus the value of
 * removed and credited pieces (where a unit price is known), never below 0.
 */
export function openAmountCents(input: OpenAmountInput): number {
  let deducted = input.creditAmountCents ?? 0;
  for (const p of input.positions) {
    if (p.unitPriceCents === null) continue;
    const pieces = p.state === 'Removed' ? p.requiredQuantity : p.creditedQuantity;
    deducted += pieces * p.unitPriceCents;
  }
  return Math.max(0, input.erpOpenAmountCents - deducted);
}
