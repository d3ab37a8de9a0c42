import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
import { CHANGES_CHANNEL } from './changeLog.js';

/**
 * A wake-up: `upTo` is the highest seq announced since the last one; undefined means "re-read
 * whatever you may have missed" (the LISTEN connection was re-established, or a payload was
 * not a number). Only a hint: subscribers read the data from the change log.
 */
export type WakeUp = (upTo: number | undefined) => void;

export interface ChangeNotifier {
  subscribe(onWake: WakeUp): () => void;
  close(): Promise<void>;
}

/**
 * One listener per process on the change channel. On PostgreSQL every instance's commits
 * arrive here, which is how a change written through one instance reaches the WebSocket
 * clients of another. Notifications that arrive together are coalesced into one wake-up.
 */
export async function createChangeNotifier(database: Database, logger: Logger): Promise<ChangeNotifier> {
  const subscribers = new Set<WakeUp>();
  let pending: { upTo: number | undefined } | undefined;

  const flush = () => {
    const { upTo } = pending!;
    pending = undefined;
    for (const onWake of subscribers) {
      try {
        onWake(upTo);
      } catch (error) {
        logger.error({ err: error }, 'change subscriber failed');
      }
    }
  };

  const onPayload = (payload: string) => {
    const seq = /^\d+$/.test(payload) ? Number(payload) : undefined;
    if (!pending) {
      pending = { upTo: seq };
      setImmediate(flush);
    } else if (pending.upTo !== undefined) {
      pending.upTo = seq === undefined ? undefined : Math.max(pending.upTo, seq);
    }
  };

  const unlisten = await database.listen(CHANGES_CHANNEL, onPayload);
  return {
    subscribe(onWake) {
      subscribers.add(onWake);
      return () => { subscribers.delete(onWake); };
    },
    async close() {
      subscribers.clear();
      await unlisten();
    },
  };
}
