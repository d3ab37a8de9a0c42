import type { AuditAction, ItemState } from '../schemas/deliveries.js';

/**
 * The four-eyes review of changed delivery notes, derived from current state and logs and never
 * stored: a delivery waits for review while it deviates from its ERP document and the latest
 * deviation-relevant change is newer than the latest confirmation.
 */

export interface ReviewPosition {
  state: ItemState;
  requiredQuantity: number;
  creditedQuantity: number;
}

export interface DeviationInput {
  positions: readonly ReviewPosition[];
  /** The active money credit; null when none is set. */
  creditAmountCents: number | null;
}

/**
 * Instants are plain numbers in one unit chosen by the caller; the server passes microseconds
 * since the epoch so that PostgreSQL's precision survives (milliseconds could make a change and
 * a confirmation within the same millisecond look simultaneous).
 */
export interface ReviewInput extends DeviationInput {
  /** When each deviation-relevant audit entry was received (scan remove/unremove, credit events). */
  changeTimes: readonly number[];
  /** The latest confirmation, null when the delivery was never confirmed. */
  resolvedAt: number | null;
}

export interface Deviation {
  /** Lines in state Removed. */
  removedLines: number;
  /** Lines still delivered but with fewer pieces (piece credit). */
  creditedLines: number;
  /** Pieces credited on the lines counted in `creditedLines`. */
  creditedPieces: number;
  moneyCreditCents: number | null;
}

export interface ReviewState {
  pending: boolean;
  /** What deviates now; null when the delivery matches its document. */
  deviation: Deviation | null;
  lastChangeAt: number | null;
}

/** Scan actions that change what is delivered; scans, unscans and holds only track loading. */
export const isDeviationAction = (action: AuditAction) => action === 'remove' || action === 'unremove';

export const isPositionModified = (p: ReviewPosition) => p.state === 'Removed' || p.creditedQuantity > 0;

/** Pieces of a line that are not delivered: all of them when it is removed, else its credited pieces. */
export const deductedPieces = (p: ReviewPosition) => (p.state === 'Removed' ? p.requiredQuantity : p.creditedQuantity);

export function deviationOf(input: DeviationInput): Deviation | null {
  let removedLines = 0;
  let creditedLines = 0;
  let creditedPieces = 0;
  for (const p of input.positions) {
    if (p.state === 'Removed') removedLines += 1;
    else if (p.creditedQuantity > 0) {
      creditedLines += 1;
      creditedPieces += p.creditedQuantity;
    }
  }
  const moneyCreditCents = input.creditAmountCents !== null && input.creditAmountCents > 0 ? input.creditAmountCents : null;
  if (removedLines === 0 && creditedLines === 0 && moneyCreditCents === null) return null;
  return { removedLines, creditedLines, creditedPieces, moneyCreditCents };
}

/** The "positions modified" flag of the back office: a line removed or reduced, or a money credit. */
export const isModified = (input: DeviationInput) => deviationOf(input) !== null;

export function reviewState(input: ReviewInput): ReviewState {
  const deviation = deviationOf(input);
  const lastChangeAt = input.changeTimes.reduce<number | null>((latest, t) => (latest === null || t > latest ? t : latest), null);
  if (deviation === null) return { pending: false, deviation, lastChangeAt };
  const pending = input.resolvedAt === null || (lastChangeAt !== null && lastChangeAt > input.resolvedAt);
  return { pending, deviation, lastChangeAt };
}
