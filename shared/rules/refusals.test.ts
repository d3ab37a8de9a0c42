import { describe, expect, it } from 'vitest';
import {
  completionRefusal,
  creditRefusal,
  internalNoteRefusal,
  itemVerdict,
  missingSignatureRefusal,
  serviceValueRefusal,
  transitionRefusal,
} from './refusals.js';

const gate = {
  state: 'active' as const,
  positions: [{ id: 'l1', lineNumber: 10, state: 'Done' as const, scannable: true }],
  noteCount: 0,
  acknowledgements: { receiptConfirmed: true },
  openAmountCents: 5000,
  latestPaymentCents: null,
  method: { name: 'Bar', collectOnSite: true },
  chosenMethodInvalid: false,
};

describe('refusals', () => {
  it('refuses a transition by the state before looking at the reason', () => {
    expect(transitionRefusal('held', 'hold', ' ')).toMatchObject({ code: 'invalid_state_transition', reason: 'invalid_state_transition' });
    expect(transitionRefusal('active', 'hold', ' ')).toEqual({
      code: 'validation',
      reason: 'validation',
      message: 'A reason to hold is required',
      errors: [{ path: 'reason', message: 'must not be empty' }],
    });
    expect(transitionRefusal('held', 'resume', null)).toBeNull();
  });

  it.each([
    [{ action: 'set' as const, amountCents: 1500, reason: 'Bruch' }, false, 'invalid_credit'],
    [{ action: 'set' as const, amountCents: 1000, reason: '' }, false, 'invalid_credit'],
    [{ action: 'remove' as const }, false, 'no_credit'],
  ])('refuses the credit %j', (credit, hasCredit, reason) => {
    expect(creditRefusal(credit, hasCredit)).toMatchObject({ code: 'validation', reason });
  });

  it('names the field of a credit that is not a 10 € step', () => {
    expect(creditRefusal({ action: 'set', amountCents: 1500, reason: 'Bruch' }, false)?.errors).toEqual([
      { path: 'amountCents', message: 'must be a multiple of 1000 between 1000 and 15000' },
    ]);
    expect(creditRefusal({ action: 'set', amountCents: 15000, reason: 'Bruch' }, false)).toBeNull();
  });

  it('answers a line state it does not allow with invalid_state_transition, a request beyond the line with validation', () => {
    const line = { state: 'Done' as const, requiredQuantity: 1, scannedQuantity: 1, creditedQuantity: 0, scannable: true };
    expect(itemVerdict(line, 'scan')).toMatchObject({ ok: false, refusal: { code: 'validation', reason: 'quantity_exceeded' } });
    expect(itemVerdict({ ...line, state: 'Removed' }, 'scan')).toMatchObject({
      ok: false,
      refusal: { code: 'invalid_state_transition', reason: 'item_removed' },
    });
    expect(itemVerdict(line, 'unscan')).toMatchObject({ ok: true });
  });

  it('refuses a service value of an inactive service before its kind', () => {
    const service = { active: false, kind: 'boolean' as const, minValue: null, maxValue: null };
    expect(serviceValueRefusal('active', service, { numericValue: 1 })).toMatchObject({ reason: 'service_inactive' });
    expect(serviceValueRefusal('held', service, { numericValue: 1 })).toMatchObject({ reason: 'delivery_not_active' });
  });

  it('puts a chosen method that cannot be used after the gates before the payment gate', () => {
    expect(completionRefusal({ ...gate, chosenMethodInvalid: true })).toMatchObject({ reason: 'payment_method_invalid' });
    const open = { ...gate, positions: [{ ...gate.positions[0], state: 'InProgress' as const }], chosenMethodInvalid: true };
    expect(completionRefusal(open)).toMatchObject({ reason: 'open_scans' });
    expect(completionRefusal(gate)).toMatchObject({ reason: 'payment_not_collected' });
    expect(completionRefusal({ ...gate, acknowledgements: { receiptConfirmed: true, paymentCollected: true } })).toBeNull();
  });

  it('counts an internal note in characters, an emoji as one', () => {
    expect(internalNoteRefusal('😀'.repeat(2000))).toBeNull();
    expect(internalNoteRefusal('😀'.repeat(2001))).toMatchObject({ reason: 'internal_note_too_long' });
    expect(missingSignatureRefusal('driver_signature')).toMatchObject({ errors: [{ path: 'driver_signature' }] });
  });
});
