import { describe, expect, it } from 'vitest';
import type { AuditAction, ItemState } from '../schemas/deliveries.js';
import { applyItemAction, isFinished, settledState, type ItemSnapshot } from './items.js';

const line = (state: ItemState, scannedQuantity: number, overrides: Partial<ItemSnapshot> = {}): ItemSnapshot => ({
  state,
  requiredQuantity: 3,
  scannedQuantity,
  creditedQuantity: 0,
  scannable: true,
  ...overrides,
});

// Every state × every action on a line of 3 pieces, 1 scanned (Done lines have all 3 scanned).
const table: [ItemState, AuditAction, string][] = [
  ['InProgress', 'scan', 'InProgress:2:0'],
  ['InProgress', 'unscan', 'InProgress:0:0'],
  ['InProgress', 'remove', 'Removed:1:0'],
  ['InProgress', 'unremove', 'invalid_action'],
  ['InProgress', 'hold', 'Held:1:0'],
  ['InProgress', 'unhold', 'invalid_action'],
  ['Done', 'scan', 'quantity_exceeded'],
  ['Done', 'unscan', 'InProgress:2:0'],
  ['Done', 'remove', 'Removed:3:0'],
  ['Done', 'unremove', 'invalid_action'],
  ['Done', 'hold', 'Held:3:0'],
  ['Done', 'unhold', 'invalid_action'],
  ['Removed', 'scan', 'item_removed'],
  ['Removed', 'unscan', 'item_removed'],
  ['Removed', 'remove', 'item_removed'],
  ['Removed', 'unremove', 'InProgress:1:0'],
  ['Removed', 'hold', 'item_removed'],
  ['Removed', 'unhold', 'invalid_action'],
  ['Held', 'scan', 'invalid_action'],
  ['Held', 'unscan', 'invalid_action'],
  ['Held', 'remove', 'Removed:1:0'],
  ['Held', 'unremove', 'invalid_action'],
  ['Held', 'hold', 'invalid_action'],
  ['Held', 'unhold', 'InProgress:1:0'],
];

const describeOutcome = (o: ReturnType<typeof applyItemAction>) =>
  o.ok ? `${o.item.state}:${o.item.scannedQuantity}:${o.item.creditedQuantity}` : o.code;

describe('item scan state machine', () => {
  it.each(table)('%s + %s → %s', (state, action, expected) => {
    expect(describeOutcome(applyItemAction(line(state, state === 'Done' ? 3 : 1), action))).toBe(expected);
  });

  it('finishes a line when the last piece is scanned', () => {
    expect(describeOutcome(applyItemAction(line('InProgress', 2), 'scan'))).toBe('Done:3:0');
  });

  it('refuses to scan or unscan a non-scannable line', () => {
    expect(describeOutcome(applyItemAction(line('InProgress', 0, { scannable: false }), 'scan'))).toBe('not_scannable');
    expect(describeOutcome(applyItemAction(line('InProgress', 0, { scannable: false }), 'unscan'))).toBe('not_scannable');
  });

  it('lets a driver unscan a line whose quantity a re-sync lowered below the scans', () => {
    expect(describeOutcome(applyItemAction(line('Done', 5, { requiredQuantity: 2 }), 'unscan'))).toBe('Done:4:0');
  });

  it('refuses to unscan below zero', () => {
    expect(describeOutcome(applyItemAction(line('InProgress', 0), 'unscan'))).toBe('nothing_to_unscan');
  });

  it('credits pieces with a quantity and removes the line when nothing is left', () => {
    expect(describeOutcome(applyItemAction(line('InProgress', 1), 'remove', 1))).toBe('InProgress:1:1');
    expect(describeOutcome(applyItemAction(line('InProgress', 1), 'remove', 2))).toBe('Done:1:2');
    expect(describeOutcome(applyItemAction(line('InProgress', 1), 'remove', 3))).toBe('Removed:1:3');
    expect(describeOutcome(applyItemAction(line('InProgress', 1), 'remove', 4))).toBe('quantity_exceeded');
  });

  it('keeps the scanned pieces when pieces are credited, so that an unremove returns the line to them', () => {
    const credited = applyItemAction(line('Done', 3), 'remove', 1);
    expect(describeOutcome(credited)).toBe('Done:3:1');
    expect(describeOutcome(applyItemAction((credited as { item: ItemSnapshot }).item, 'unremove'))).toBe('Done:3:0');
  });

  it('scans only up to the effective quantity', () => {
    expect(describeOutcome(applyItemAction(line('Done', 2, { creditedQuantity: 1 }), 'scan'))).toBe('quantity_exceeded');
  });

  it('unremove undoes every credit of the line and settles by its scans', () => {
    expect(describeOutcome(applyItemAction(line('Done', 2, { creditedQuantity: 1 }), 'unremove'))).toBe('InProgress:2:0');
    expect(describeOutcome(applyItemAction(line('Removed', 3), 'unremove'))).toBe('Done:3:0');
  });

  it('keeps a held line held when pieces are credited, and settles it by its scans when they are uncredited', () => {
    expect(describeOutcome(applyItemAction(line('Held', 1), 'remove', 1))).toBe('Held:1:1');
    expect(describeOutcome(applyItemAction(line('Held', 1, { creditedQuantity: 1 }), 'unremove'))).toBe('InProgress:1:0');
    expect(describeOutcome(applyItemAction(line('Held', 3, { creditedQuantity: 1 }), 'unremove'))).toBe('Done:3:0');
  });

  it('settles by quantities and treats Done, Removed and non-scannable lines as finished', () => {
    expect(settledState({ requiredQuantity: 2, creditedQuantity: 0, scannedQuantity: 2 })).toBe('Done');
    expect(settledState({ requiredQuantity: 2, creditedQuantity: 2, scannedQuantity: 0 })).toBe('Removed');
    expect(isFinished({ state: 'Done', scannable: true })).toBe(true);
    expect(isFinished({ state: 'Removed', scannable: true })).toBe(true);
    expect(isFinished({ state: 'Held', scannable: true })).toBe(false);
    expect(isFinished({ state: 'InProgress', scannable: true })).toBe(false);
    expect(isFinished({ state: 'InProgress', scannable: false })).toBe(true);
  });
});
