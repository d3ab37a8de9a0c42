import { describe, expect, it } from 'vitest';
import type { DeliveryState } from '../schemas/deliveries.js';
import { acceptsWork, nextDeliveryState, type DeliveryOperation } from './delivery.js';
import { isRefusal } from './eventResults.js';
import { creditProblems, paymentProblem } from './money.js';
import { noteHasContent } from './notes.js';
import { openAmountCents } from './openAmount.js';
import { serviceValueProblem } from './services.js';

describe('delivery transitions', () => {
  const table: [DeliveryState, DeliveryOperation, DeliveryState | null][] = [
    ['active', 'hold', 'held'],
    ['active', 'resume', null],
    ['active', 'cancel', 'canceled'],
    ['active', 'complete', 'completed'],
    ['held', 'hold', null],
    ['held', 'resume', 'active'],
    ['held', 'cancel', 'canceled'],
    ['held', 'complete', null],
    ['canceled', 'hold', null],
    ['canceled', 'resume', null],
    ['canceled', 'cancel', null],
    ['canceled', 'complete', null],
    ['completed', 'hold', null],
    ['completed', 'resume', null],
    ['completed', 'cancel', null],
    ['completed', 'complete', null],
  ];
  it.each(table)('%s + %s → %s', (state, operation, next) => {
    expect(nextDeliveryState(state, operation)).toBe(next);
  });

  it.each([
    ['active', true],
    ['held', false],
    ['canceled', false],
    ['completed', false],
  ] as const)('work on a %s delivery allowed: %s', (state, allowed) => {
    expect(acceptsWork(state)).toBe(allowed);
  });
});

describe('money credit', () => {
  it.each([1000, 2000, 15000])('accepts %i cents', (amount) => {
    expect(creditProblems(amount, 'Ware beschädigt')).toEqual([]);
  });
  it.each([0, -1000, 500, 1500, 16000, 15001, 10.5, undefined])('refuses %s cents', (amount) => {
    expect(creditProblems(amount, 'Grund').map((p) => p.path)).toEqual(['amountCents']);
  });
  it.each(['', '   ', undefined])('refuses the reason %j', (reason) => {
    expect(creditProblems(1000, reason).map((p) => p.path)).toEqual(['reason']);
  });
});

describe('payment', () => {
  it('accepts exactly the open amount with an active method', () => {
    expect(paymentProblem({ methodActive: true, openAmountCents: 2500, expectedAmountCents: 2500 })).toBeNull();
  });
  it.each([
    [{ methodActive: false, openAmountCents: 2500, expectedAmountCents: 2500 }, 'method_invalid'],
    [{ methodActive: true, openAmountCents: 0, expectedAmountCents: 0 }, 'no_open_amount'],
    [{ methodActive: true, openAmountCents: 2500, expectedAmountCents: 2400 }, 'amount_differs'],
  ])('refuses %j with %s', (input, code) => {
    expect(paymentProblem(input)?.code).toBe(code);
  });
});

describe('open amount', () => {
  const positions = [
    { state: 'Done', requiredQuantity: 2, creditedQuantity: 0, unitPriceCents: 1000 },
    { state: 'Removed', requiredQuantity: 1, creditedQuantity: 0, unitPriceCents: 500 },
    { state: 'InProgress', requiredQuantity: 4, creditedQuantity: 1, unitPriceCents: 250 },
    { state: 'Removed', requiredQuantity: 3, creditedQuantity: 0, unitPriceCents: null },
  ];
  it('deducts the money credit and the value of removed and credited pieces', () => {
    expect(openAmountCents({ erpOpenAmountCents: 10000, creditAmountCents: 2000, positions })).toBe(10000 - 2000 - 500 - 250);
  });
  it('never goes below zero', () => {
    expect(openAmountCents({ erpOpenAmountCents: 1000, creditAmountCents: 2000, positions })).toBe(0);
  });
  it('adds the value of a removed line with a negative price (a deposit not taken back)', () => {
    const deposit = { state: 'Removed', requiredQuantity: 2, creditedQuantity: 0, unitPriceCents: -150 };
    expect(openAmountCents({ erpOpenAmountCents: 1000, creditAmountCents: null, positions: [deposit] })).toBe(1300);
  });
});

describe('notes and service values', () => {
  it.each([
    [{ text: 'Hinterhof' }, true],
    [{ imageAttachment: '~abc' }, true],
    [{ text: '  ', imageAttachment: '' }, false],
    [{ text: null, imageAttachment: null }, false],
    [{}, false],
  ])('note %j has content: %s', (note, expected) => {
    expect(noteHasContent(note)).toBe(expected);
  });

  const numeric = { kind: 'numeric' as const, minValue: 1, maxValue: 5 };
  const boolean = { kind: 'boolean' as const, minValue: null, maxValue: null };
  it.each([
    [boolean, { boolValue: true }, null],
    [boolean, { numericValue: 1 }, 'boolValue'],
    [boolean, { boolValue: true, numericValue: 1 }, 'boolValue'],
    [numeric, { numericValue: 3 }, null],
    [numeric, { numericValue: 0 }, 'numericValue'],
    [numeric, { numericValue: 6 }, 'numericValue'],
    [numeric, { boolValue: false }, 'numericValue'],
    [numeric, {}, 'numericValue'],
  ])('service %j with %j → problem at %s', (service, value, path) => {
    expect(serviceValueProblem(service, value)?.path ?? null).toBe(path);
  });
});

describe('event results', () => {
  it.each([
    [{ status: 'applied' }, false],
    [{ status: 'duplicate' }, false],
    [{ status: 'duplicate', reason: 'other_event' }, false],
    [{ status: 'duplicate', code: 'invalid_state_transition' }, true],
    [{ status: 'rejected', code: 'validation' }, true],
  ] as const)('%o says no: %s', (result, refused) => {
    expect(isRefusal(result)).toBe(refused);
  });
});
