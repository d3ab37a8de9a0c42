import type { AuditAction, ItemState } from '../schemas/deliveries.js';

export interface ItemSnapshot {
  state: ItemState;
  requiredQuantity: number;
  scannedQuantity: number;
  creditedQuantity: number;
  scannable: boolean;
}

export type ItemRejectionCode = 'quantity_exceeded' | 'nothing_to_unscan' | 'item_removed' | 'not_scannable' | 'invalid_action';

export type ItemOutcome = { ok: true; item: ItemSnapshot } | { ok: false; code: ItemRejectionCode; message: string };

/** Pieces still to deliver once credited pieces are taken off. */
export const effectiveQuantity = (item: Pick<ItemSnapshot, 'requiredQuantity' | 'creditedQuantity'>) =>
  item.requiredQuantity - item.creditedQuantity;

/** The state a line settles in from its quantities alone: Removed when nothing is left, else by its scans. */
export function settledState(item: Pick<ItemSnapshot, 'requiredQuantity' | 'creditedQuantity' | 'scannedQuantity'>): ItemState {
  const effective = effectiveQuantity(item);
  if (effective <= 0) return 'Removed';
  return item.scannedQuantity >= effective ? 'Done' : 'InProgress';
}

/** Done and Removed lines are finished; non-scannable lines never block. */
export const isFinished = (item: Pick<ItemSnapshot, 'state' | 'scannable'>) =>
  !item.scannable || item.state === 'Done' || item.state === 'Removed';

const reject = (code: ItemRejectionCode, message: string): ItemOutcome => ({ ok: false, code, message });

/** The item scan state machine: one audit action applied to one line. */
export function applyItemAction(item: ItemSnapshot, action: AuditAction, quantity?: number): ItemOutcome {
  const effective = effectiveQuantity(item);
  switch (action) {
    case 'scan':
    case 'unscan': {
      if (!item.scannable) return reject('not_scannable', 'The article of this line is not scannable');
      if (item.state === 'Removed') return reject('item_removed', 'The line is removed');
      if (item.state === 'Held') return reject('invalid_action', 'The line is held; unhold it first');
      const scannedQuantity = item.scannedQuantity + (action === 'scan' ? 1 : -1);
      // Only a scan can exceed the line: after a re-sync lowered the quantity, unscans must still work.
      if (action === 'scan' && scannedQuantity > effective)
        return reject('quantity_exceeded', `All ${effective} pieces are already scanned`);
      if (scannedQuantity < 0) return reject('nothing_to_unscan', 'No scanned piece to take back');
      return { ok: true, item: { ...item, scannedQuantity, state: settledState({ ...item, scannedQuantity }) } };
    }
    case 'remove': {
      if (item.state === 'Removed') return reject('item_removed', 'The line is already removed');
      if (quantity === undefined) return { ok: true, item: { ...item, state: 'Removed' } };
      if (quantity > effective) return reject('quantity_exceeded', `Only ${effective} pieces are left to credit`);
      // The scans stay as they were: an unremove returns the line to what was scanned.
      const next = { ...item, creditedQuantity: item.creditedQuantity + quantity };
      const settled = settledState(next);
      return { ok: true, item: { ...next, state: item.state === 'Held' && settled !== 'Removed' ? 'Held' : settled } };
    }
    case 'unremove': {
      if (item.state !== 'Removed' && item.creditedQuantity === 0)
        return reject('invalid_action', 'Nothing on this line is removed or credited');
      // The documents settle an unremoved line by its scans, a held one too: the hold ends with it.
      const next = { ...item, creditedQuantity: 0 };
      return { ok: true, item: { ...next, state: settledState(next) } };
    }
    case 'hold': {
      if (item.state === 'Removed') return reject('item_removed', 'The line is removed');
      if (item.state === 'Held') return reject('invalid_action', 'The line is already held');
      return { ok: true, item: { ...item, state: 'Held' } };
    }
    case 'unhold': {
      if (item.state !== 'Held') return reject('invalid_action', 'The line is not held');
      return { ok: true, item: { ...item, state: settledState(item) } };
    }
  }
}
