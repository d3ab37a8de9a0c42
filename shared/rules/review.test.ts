import { describe, expect, it } from 'vitest';
import type { AuditAction, ItemState } from '../schemas/deliveries.js';
import {
  deductedPieces,
  deviationOf,
  isDeviationAction,
  isModified,
  isPositionModified,
  reviewState,
  type ReviewPosition,
} from './review.js';

const line = (state: ItemState, creditedQuantity = 0, requiredQuantity = 5): ReviewPosition => ({
  state,
  requiredQuantity,
  creditedQuantity,
});
const untouched = [line('Done'), line('InProgress'), line('Held')];

describe('deviation', () => {
  it.each([
    ['InProgress', 0, false],
    ['Done', 0, false],
    ['Held', 0, false],
    ['Removed', 0, true],
    ['InProgress', 1, true],
    ['Done', 2, true],
    ['Held', 1, true],
    ['Removed', 5, true],
  ] as const)('a %s line with %i credited pieces is modified: %s', (state, credited, modified) => {
    expect(isPositionModified(line(state, credited))).toBe(modified);
    expect(isModified({ positions: [line('Done'), line(state, credited)], creditAmountCents: null })).toBe(modified);
  });

  it('finds no deviation on untouched lines without money credit', () => {
    expect(deviationOf({ positions: untouched, creditAmountCents: null })).toBeNull();
    expect(deviationOf({ positions: [], creditAmountCents: null })).toBeNull();
  });

  it('counts removed lines, credited lines and their pieces and the money credit', () => {
    expect(
      deviationOf({
        positions: [line('Removed'), line('Removed', 2), line('Done', 2), line('InProgress', 1), line('Done')],
        creditAmountCents: 3000,
      }),
    ).toEqual({ removedLines: 2, creditedLines: 2, creditedPieces: 3, moneyCreditCents: 3000 });
  });

  it('treats an active money credit alone as a deviation', () => {
    expect(deviationOf({ positions: untouched, creditAmountCents: 1000 })).toEqual({
      removedLines: 0,
      creditedLines: 0,
      creditedPieces: 0,
      moneyCreditCents: 1000,
    });
  });

  it('treats a zero credit amount as no money credit', () => {
    expect(deviationOf({ positions: untouched, creditAmountCents: 0 })).toBeNull();
  });

  it.each([
    ['scan', false],
    ['unscan', false],
    ['hold', false],
    ['unhold', false],
    ['remove', true],
    ['unremove', true],
  ] as const)('the scan action %s is deviation-relevant: %s', (action: AuditAction, relevant) => {
    expect(isDeviationAction(action)).toBe(relevant);
  });

  it('deducts the whole line when removed and the credited pieces otherwise', () => {
    expect(deductedPieces(line('Removed', 2, 7))).toBe(7);
    expect(deductedPieces(line('Done', 2, 7))).toBe(2);
    expect(deductedPieces(line('InProgress', 0, 7))).toBe(0);
  });
});

describe('review state', () => {
  const removed = [line('Removed'), line('Done')];

  it('is pending when a deviation exists and the delivery was never confirmed', () => {
    expect(reviewState({ positions: removed, creditAmountCents: null, changeTimes: [10], resolvedAt: null })).toMatchObject({
      pending: true,
      lastChangeAt: 10,
      deviation: { removedLines: 1 },
    });
  });

  it('is not pending once the latest change is confirmed', () => {
    expect(reviewState({ positions: removed, creditAmountCents: null, changeTimes: [10], resolvedAt: 20 }).pending).toBe(false);
  });

  it('is not pending when the confirmation carries the same instant as the change', () => {
    expect(reviewState({ positions: removed, creditAmountCents: null, changeTimes: [20], resolvedAt: 20 }).pending).toBe(false);
  });

  it('is pending again when the delivery changes after a confirmation', () => {
    expect(reviewState({ positions: removed, creditAmountCents: 1000, changeTimes: [10, 30], resolvedAt: 20 }).pending).toBe(true);
  });

  it('takes the latest change whatever the order of the times', () => {
    const state = reviewState({ positions: removed, creditAmountCents: null, changeTimes: [30, 10, 25], resolvedAt: 20 });
    expect(state).toMatchObject({ pending: true, lastChangeAt: 30 });
  });

  it('is not pending when the original state is restored, confirmed or not', () => {
    for (const resolvedAt of [null, 5, 50]) {
      const state = reviewState({ positions: untouched, creditAmountCents: null, changeTimes: [10, 20], resolvedAt });
      expect(state).toEqual({ pending: false, deviation: null, lastChangeAt: 20 });
    }
  });

  it('stays pending when one of two deviations is undone after a confirmation', () => {
    // Line removed and credit set, confirmed at 20, credit removed at 30: the removal remains and the delivery changed.
    expect(reviewState({ positions: removed, creditAmountCents: null, changeTimes: [10, 15, 30], resolvedAt: 20 }).pending).toBe(true);
  });

  it('is pending for a deviation without any logged change only while never confirmed', () => {
    expect(reviewState({ positions: removed, creditAmountCents: null, changeTimes: [], resolvedAt: null }).pending).toBe(true);
    expect(reviewState({ positions: removed, creditAmountCents: null, changeTimes: [], resolvedAt: 1 }).pending).toBe(false);
  });

  it('walks the full cycle: remove, confirm, unremove, remove again, credit, confirm, credit removed', () => {
    const steps: [ReviewPosition[], number | null, number[], number | null, boolean][] = [
      [removed, null, [1], null, true],
      [removed, null, [1], 2, false],
      [untouched, null, [1, 3], 2, false],
      [removed, null, [1, 3, 4], 2, true],
      [removed, 2000, [1, 3, 4, 5], 2, true],
      [removed, 2000, [1, 3, 4, 5], 6, false],
      [removed, null, [1, 3, 4, 5, 7], 6, true],
      [untouched, null, [1, 3, 4, 5, 7, 8], 6, false],
    ];
    for (const [positions, creditAmountCents, changeTimes, resolvedAt, pending] of steps) {
      expect(reviewState({ positions, creditAmountCents, changeTimes, resolvedAt }).pending).toBe(pending);
    }
  });
});
