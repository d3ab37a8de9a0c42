import type { Outbox } from '../outbox.js';

/**
 * Entries an older release of the SDK marked refused when the service answered 426
 * `client_too_old` (0.1.0 knew no such answer): the updated app sends them again.
 */
export async function requeueRefusedAsTooOld(outbox: Outbox) {
  for (const entry of outbox.rejected()) {
    if (entry.rejection?.code === 'client_too_old') await outbox.update(entry, { state: 'pending', rejection: undefined, attempts: 0 });
  }
}
