import { describe, expect, it } from 'vitest';
import type { DeliveryState, ItemState } from '../schemas/deliveries.js';
import { erpSequence, isFinalDelivery, lineStateAfterResync, mayDeleteUnsentLine, resyncSortOrders } from './resync.js';

const line = (state: ItemState, requiredQuantity: number, scannedQuantity = 0, creditedQuantity = 0) => ({
  state,
  requiredQuantity,
  scannedQuantity,
  creditedQuantity,
});

describe('a re-sync leaves final deliveries alone', () => {
  it.each([
    ['active', false],
    ['held', false],
    ['completed', true],
    ['canceled', true],
  ] as [DeliveryState, boolean][])('%s final: %s', (state, final) => {
    expect(isFinalDelivery(state)).toBe(final);
  });
});

describe('line state after a re-sync', () => {
  it('starts a new line InProgress', () => {
    expect(lineStateAfterResync(undefined, 5)).toBe('InProgress');
  });

  it.each([
    ['an unchanged quantity keeps the stored state, not recomputed', line('Done', 5, 2), 5, 'Done'],
    ['a raised quantity reopens a done line', line('Done', 3, 3), 5, 'InProgress'],
    ['a lowered quantity finishes a line by its scans', line('InProgress', 5, 3), 3, 'Done'],
    ['a quantity lowered below the scans counts as done (scans are never clamped)', line('InProgress', 5, 4), 2, 'Done'],
    ['credits count against the new quantity', line('InProgress', 5, 2, 2), 4, 'Done'],
    ['credits that take every piece of the new quantity remove the line', line('InProgress', 5, 0, 3), 3, 'Removed'],
    ['a removed line stays removed', line('Removed', 5, 0), 8, 'Removed'],
    ['a held line stays held', line('Held', 5, 1), 1, 'Held'],
  ] as [string, ReturnType<typeof line>, number, ItemState][])('%s', (_name, stored, quantity, state) => {
    expect(lineStateAfterResync(stored, quantity)).toBe(state);
  });
});

describe('lines the ERP no longer sends', () => {
  it.each([
    ['an untouched line is deleted', line('InProgress', 5), true],
    ['a scanned line stays', line('InProgress', 5, 1), false],
    ['a credited line stays', line('InProgress', 5, 0, 1), false],
    ['a removed line stays', line('Removed', 5), false],
    ['a held line stays', line('Held', 5), false],
  ] as [string, ReturnType<typeof line>, boolean][])('%s', (_name, stored, deleted) => {
    expect(mayDeleteUnsentLine(stored)).toBe(deleted);
  });
});

describe('sort order after a re-sync', () => {
  it('takes the ERP sequence, else the position in the payload', () => {
    expect([erpSequence(7, 0), erpSequence(undefined, 3), erpSequence(0, 4)]).toEqual([7, 3, 0]);
  });

  it('follows the ERP until the driver reorders, also for arriving deliveries', () => {
    const incoming = [
      { erpSequence: 0, sortOrder: 5 },
      { erpSequence: 1, sortOrder: null },
      { erpSequence: 2, sortOrder: 0 },
    ];
    expect(resyncSortOrders(incoming, false, [0, 5])).toEqual([0, 1, 2]);
  });

  it("keeps the driver's order and appends arriving deliveries after the tour's last, in payload order", () => {
    const incoming = [
      { erpSequence: 0, sortOrder: null },
      { erpSequence: 1, sortOrder: 2 },
      { erpSequence: 2, sortOrder: null },
      { erpSequence: 3, sortOrder: 0 },
    ];
    expect(resyncSortOrders(incoming, true, [2, 0, 9])).toEqual([10, 2, 11, 0]);
  });

  it('starts an empty reordered tour at 0', () => {
    expect(
      resyncSortOrders(
        [
          { erpSequence: 4, sortOrder: null },
          { erpSequence: 5, sortOrder: null },
        ],
        true,
        [],
      ),
    ).toEqual([0, 1]);
  });
});
