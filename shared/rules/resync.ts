import type { DeliveryState, ItemState } from '../schemas/deliveries.js';
import { settledState, type ItemSnapshot } from './items.js';

// What a re-sync of a tour from the ERP does to the driver's local work (docs/erp-integration.md).

/** A completed or canceled delivery is final: a re-sync changes neither it nor its lines nor its contacts. */
export const isFinalDelivery = (state: DeliveryState) => state === 'completed' || state === 'canceled';

type StoredLine = Pick<ItemSnapshot, 'state' | 'requiredQuantity' | 'scannedQuantity' | 'creditedQuantity'>;

/**
 * A line's state after the ERP sent it with `requiredQuantity`: a new line starts InProgress; scans
 * and credits stay, so only a changed quantity moves the state, by the scan rule. Removed and Held
 * lines stay as they are (a row cannot tell a whole removal from credits that took every piece).
 */
export function lineStateAfterResync(stored: StoredLine | undefined, requiredQuantity: number): ItemState {
  if (!stored) return 'InProgress';
  if (stored.requiredQuantity === requiredQuantity || stored.state === 'Removed' || stored.state === 'Held') return stored.state;
  return settledState({ requiredQuantity, creditedQuantity: stored.creditedQuantity, scannedQuantity: stored.scannedQuantity });
}

/**
 * Whether a line the ERP no longer sends may be deleted: only when nothing was done with it. The
 * engine also keeps a line with a scan in its audit or a credit note naming it.
 */
export const mayDeleteUnsentLine = (line: StoredLine) =>
  line.scannedQuantity === 0 && line.creditedQuantity === 0 && line.state !== 'Removed' && line.state !== 'Held';

/** The ERP sequence of a delivery: its `sequence`, else its position in the payload. */
export const erpSequence = (sequence: number | undefined, index: number) => sequence ?? index;

/**
 * The sort order of each incoming delivery, in payload order; `sortOrder` is its place in this tour
 * now, null when it arrives (new, or moved in from another tour). A tour follows the ERP's order
 * until the driver reorders it; from then on the driver's order stays and arriving deliveries are
 * appended after the tour's last one, in payload order.
 */
export function resyncSortOrders(
  incoming: { erpSequence: number; sortOrder: number | null }[],
  orderedByDriver: boolean,
  tourSortOrders: number[],
): number[] {
  let next = Math.max(-1, ...tourSortOrders) + 1;
  return incoming.map((d) => (!orderedByDriver ? d.erpSequence : (d.sortOrder ?? next++)));
}
