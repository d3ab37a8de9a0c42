import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
import { CHANGES_CHANNEL } from './changeLog.js';

/**
 * A wake-up: `upTo` is the highest seq announced since the last one; undefined means "re-read
 * whatever you may have missed" (the LISTEN connection was re-established, or a payload was
 * not a number). `accounts`, when given, are the only accounts with something new; without it,
 * every account may have. Only a hint: subscribers read the data from the change log.
 */
export type WakeUp = (upTo: number | undefined, accounts?: ReadonlySet<number>) => void;

export interface ChangeNotifier {
  subscribe(onWake: WakeUp): () => void;
  /** Called with an account that any instance deactivated (its live connections must go). */
  onDeactivated(listener: (personalnummer: number) => void): () => void;
  close(): Promise<void>;
}

/**
 * One listener per process on the change channel. On PostgreSQL every instance's commits
 * arrive here, which is how a change written through one instance reaches the WebSocket
 * clients of another. Notifications that arrive together are coalesced into one wake-up.
 */
export async function createChangeNotifier(database: Database, logger: Logger): Promise<ChangeNotifier> {
  const subscribers = new Set<WakeUp>();
  const deactivationListeners = new Set<(personalnummer: number) => void>();
  let pending: { upTo: number | undefined; accounts: Set<number> | undefined } | undefined;

  const flush = () => {
    const { upTo, accounts } = pending!;
    pending = undefined;
    for (const onWake of subscribers) {
      try {
        onWake(upTo, accounts);
      } catch (error) {
        logger.error({ err: error }, 'change subscriber failed');
      }
    }
  };

  const onPayload = (payload: string) => {
    const deactivated = /^deactivated:(\d+)$/.exec(payload);
    if (deactivated) {
      for (const listener of deactivationListeners) listener(Number(deactivated[1]));
      return;
    }
    // "<max seq>:<account>,<account>" or "<max seq>:*"; anything else means "re-read everything".
    const match = /^(\d+)(?::(\*|\d+(?:,\d+)*))?$/.exec(payload);
    const seq = match ? Number(match[1]) : undefined;
    const accounts = match?.[2] && match[2] !== '*' ? match[2].split(',').map(Number) : undefined;
    if (!pending) {
      pending = { upTo: seq, accounts: accounts && new Set(accounts) };
      setImmediate(flush);
    } else {
      if (pending.upTo !== undefined) pending.upTo = seq === undefined ? undefined : Math.max(pending.upTo, seq);
      if (pending.accounts) {
        if (accounts) for (const account of accounts) pending.accounts.add(account);
        else pending.accounts = undefined;
      }
    }
  };

  const unlisten = await database.listen(CHANGES_CHANNEL, onPayload);
  return {
    subscribe(onWake) {
      subscribers.add(onWake);
      return () => {
        subscribers.delete(onWake);
      };
    },
    onDeactivated(listener) {
      deactivationListeners.add(listener);
      return () => {
        deactivationListeners.delete(listener);
      };
    },
    async close() {
      subscribers.clear();
      deactivationListeners.clear();
      await unlisten();
    },
  };
}
