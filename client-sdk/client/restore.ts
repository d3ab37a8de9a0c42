import type { KeptAction } from '../acknowledged.js';
import { ProblemError } from '../problem.js';
import type { ClientCore } from './core.js';
import type { Sender } from './sender.js';

/**
 * A cursor refused as ahead of the change log, or as one of another database, means the service
 * may have lost what it acknowledged (it was restored from an older backup). An expired cursor
 * only means the phone was away longer than the log is kept.
 */
export const mayHaveLostAcknowledged = (refusal: unknown) =>
  refusal instanceof ProblemError && !refusal.errors?.some((e) => e.message === 'cursor expired');

/**
 * Queues the kept acknowledged actions again (each under its own id, in its old place) and
 * sends them before the resync; the service answers `duplicate` for what it still holds.
 * Answers their ids: the feed lets their marks go once the resync has read the tours.
 */
export async function sendAcknowledgedAgain(core: ClientCore, sender: Sender, refusal: unknown): Promise<string[]> {
  if (!mayHaveLostAcknowledged(refusal)) return [];
  const again = (await core.kept.all()).filter((kept) => {
    const state = core.outbox.get(kept.id)?.state;
    return state === undefined || state === 'acknowledged';
  });
  // Until the resync the view is the old copy, which already holds what it took from the feed.
  for (const kept of again) if (heldByCopy(core, kept)) core.heldByCopy.add(kept.id);
  const requeued = await core.outbox.requeue(again);
  await sender.flushAll();
  return requeued.map((entry) => entry.id);
}

function heldByCopy(core: ClientCore, kept: KeptAction): boolean {
  const entry = core.outbox.get(kept.id);
  if (!entry || core.heldByCopy.has(kept.id)) return true;
  return entry.ackSeq !== undefined && entry.ackSeq <= core.state.lastSeq;
}
