import { describe, expect, it } from 'vitest';
import {
  COMPLETION_TIME_MAX_AGE_MS,
  completionProblem,
  completionTime,
  paymentSettlement,
  type CompletionGateInput,
} from './completion.js';

const ready: CompletionGateInput = {
  state: 'active',
  positions: [
    { id: 'a', lineNumber: 10, state: 'Done', scannable: true },
    { id: 'b', lineNumber: 20, state: 'Removed', scannable: true },
    { id: 'c', lineNumber: 30, state: 'InProgress', scannable: false },
  ],
  noteCount: 0,
  acknowledgements: { receiptConfirmed: true },
  openAmountCents: 0,
  latestPaymentCents: null,
  method: null,
};
const bar = { name: 'Bar', collectOnSite: true };
const invoice = { name: 'Rechnung', collectOnSite: false };

describe('completion gates', () => {
  it('lets a finished, confirmed delivery without open amount complete', () => {
    expect(completionProblem(ready)).toBeNull();
  });

  it.each(['held', 'canceled', 'completed'] as const)('refuses a %s delivery as an invalid transition', (state) => {
    expect(completionProblem({ ...ready, state })?.code).toBe('invalid_state_transition');
  });

  it.each(['InProgress', 'Held'] as const)('refuses an open scannable line that is %s and names it', (state) => {
    const problem = completionProblem({ ...ready, positions: [...ready.positions, { id: 'd', lineNumber: 40, state, scannable: true }] });
    expect(problem).toMatchObject({ reason: 'open_scans', errors: [{ path: 'positions.d' }] });
  });

  it('asks for the notes acknowledgement only when notes exist', () => {
    expect(completionProblem({ ...ready, noteCount: 2 })?.reason).toBe('notes_not_acknowledged');
    expect(completionProblem({ ...ready, noteCount: 2, acknowledgements: { receiptConfirmed: true, notesAcknowledged: true } })).toBeNull();
  });

  it('requires the receipt to be confirmed', () => {
    expect(completionProblem({ ...ready, acknowledgements: { receiptConfirmed: false } })?.reason).toBe('receipt_not_confirmed');
  });

  it('checks the gates in the order of the spec', () => {
    const everythingWrong: CompletionGateInput = {
      ...ready,
      state: 'held',
      positions: [{ id: 'x', lineNumber: 1, state: 'Held', scannable: true }],
      noteCount: 1,
      acknowledgements: { receiptConfirmed: false },
      openAmountCents: 500,
      method: bar,
    };
    expect(completionProblem(everythingWrong)?.reason).toBe('not_active');
    expect(completionProblem({ ...everythingWrong, state: 'active' })?.reason).toBe('open_scans');
    expect(completionProblem({ ...everythingWrong, state: 'active', positions: ready.positions })?.reason).toBe('notes_not_acknowledged');
    expect(completionProblem({ ...everythingWrong, state: 'active', positions: ready.positions, noteCount: 0 })?.reason).toBe(
      'receipt_not_confirmed',
    );
    expect(
      completionProblem({
        ...everythingWrong,
        state: 'active',
        positions: ready.positions,
        noteCount: 0,
        acknowledgements: { receiptConfirmed: true },
      })?.reason,
    ).toBe('payment_not_collected');
  });

  describe('payment duty', () => {
    it.each([
      [{ openAmountCents: 0, latestPaymentCents: null, method: bar }, 'none_open'],
      [{ openAmountCents: 500, latestPaymentCents: 500, method: bar }, 'logged_payment'],
      [{ openAmountCents: 500, latestPaymentCents: 700, method: bar }, 'collected_on_site'],
      [{ openAmountCents: 500, latestPaymentCents: null, method: invoice }, 'not_collected_on_site'],
      [{ openAmountCents: 500, latestPaymentCents: null, method: null }, 'not_collected_on_site'],
    ])('%j is settled as %s', (input, settlement) => {
      expect(paymentSettlement(input)).toBe(settlement);
    });

    it('needs the legacy confirmation for an on-site method without a logged payment of the open amount', () => {
      const open = { ...ready, openAmountCents: 500, method: bar };
      expect(completionProblem(open)?.reason).toBe('payment_not_collected');
      expect(completionProblem({ ...open, acknowledgements: { receiptConfirmed: true, paymentCollected: true } })).toBeNull();
      expect(completionProblem({ ...open, latestPaymentCents: 500 })).toBeNull();
      expect(completionProblem({ ...open, method: invoice })).toBeNull();
    });
  });
});

describe('completionTime', () => {
  const now = new Date('2026-03-02T12:00:00.000Z');
  const at = (ms: number) => new Date(now.getTime() + ms).toISOString();
  const longAgo = new Date('2026-01-01T00:00:00.000Z');

  it.each([
    [undefined, longAgo, now.toISOString(), 'no device time'],
    [at(-3600_000), longAgo, at(-3600_000), 'an hour ago'],
    [at(-COMPLETION_TIME_MAX_AGE_MS), longAgo, at(-COMPLETION_TIME_MAX_AGE_MS), 'exactly a week ago'],
    [at(-COMPLETION_TIME_MAX_AGE_MS - 1), longAgo, now.toISOString(), 'more than a week ago'],
    [at(1), longAgo, now.toISOString(), 'ahead of now'],
    [at(-3600_000), new Date(at(-3600_000)), at(-3600_000), 'when the delivery was created'],
    [at(-3600_001), new Date(at(-3600_000)), now.toISOString(), 'before the delivery was created'],
  ])('takes %s with the delivery created %s as %s (%s)', (occurredAt, notBefore, expected, _why) => {
    expect(completionTime(occurredAt, now, notBefore).toISOString()).toBe(expected);
  });
});
