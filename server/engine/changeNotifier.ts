import type { Logger } from 'pino';
import { isDatabaseUnavailable } from '../db/availability.js';
import type { Database } from '../db/client.js';
import { AnnouncedHead, widen, type Audience } from './announcedHead.js';
import { CHANGES_CHANNEL, stableHead } from './changeLog.js';

/**
 * A wake-up: every change up to `upTo`, the head, is readable. `accounts`, when given, are the
 * only accounts with something new; without it, every account may have. Only a hint:
 * subscribers read the data from the change log.
 */
export type WakeUp = (upTo: number, accounts?: ReadonlySet<number>) => void;

export interface ChangeNotifier {
  subscribe(onWake: WakeUp): () => void;
  /**
   * The stable head announced so far (`AnnouncedHead`): a read up to it needs no lock. Undefined
   * until the first head is read; a reader then takes the lock itself.
   */
  head(): number | undefined;
  /** Called with an account that any instance deactivated (its live connections must go). */
  onDeactivated(listener: (personalnummer: number) => void): () => void;
  /** Resolves once no head read under the lock is running or waiting for a gap. */
  quiet(): Promise<void>;
  close(): Promise<void>;
}

/**
 * How long committed seqs may wait above a gap before a head read under the lock settles it: a
 * writer in flight below them commits within milliseconds; one that rolled back never does.
 */
export const GAP_SETTLE_MS = 200;
// How soon a head read that failed on the database is tried again.
const SETTLE_RETRY_MS = 1000;

/**
 * One listener per process on the change channel. On PostgreSQL every instance's commits
 * arrive here, which is how a change written through one instance reaches the WebSocket
 * clients of another. The head moves as the commits arrive, and the accounts of the commits it
 * passed are woken together in the next turn of the event loop.
 */
export async function createChangeNotifier(database: Database, logger: Logger): Promise<ChangeNotifier> {
  const subscribers = new Set<WakeUp>();
  const deactivationListeners = new Set<(personalnummer: number) => void>();
  const announced = new AnnouncedHead();
  let closed = false;

  let flushing = false;
  const flush = () => {
    flushing = false;
    const due = announced.takeDue();
    if (!due) return;
    for (const onWake of subscribers) {
      try {
        onWake(due.upTo, due.accounts);
      } catch (error) {
        logger.error({ err: error }, 'change subscriber failed');
      }
    }
  };
  const scheduleFlush = () => {
    if (flushing) return;
    flushing = true;
    setImmediate(flush);
  };

  // Commits whose seqs this process does not know (lost with the LISTEN connection, or too many
  // runs to announce): their accounts are woken by the next head read under the lock, which only
  // one that starts after they arrived covers.
  let unplaced: Audience = 'everyone';
  let settling = false;
  let settleAgain = false;
  let retry: NodeJS.Timeout | undefined;
  let reading: Promise<void> | undefined;
  const settle = () => {
    if (closed) return;
    if (settling) {
      settleAgain = true;
      return;
    }
    settling = true;
    clearTimeout(retry);
    const woken = unplaced;
    unplaced = undefined;
    reading = stableHead(database.db)
      .then(
        (head) => {
          announced.settle(head);
          announced.addDue(woken);
        },
        (error: unknown) => {
          if (closed) return;
          unplaced = widen(unplaced, woken);
          if (isDatabaseUnavailable(error)) database.health.failed(error);
          else logger.warn({ err: error }, 'reading the change log head failed');
          retry = setTimeout(settle, SETTLE_RETRY_MS).unref();
        },
      )
      .finally(() => {
        settling = false;
        reading = undefined;
        scheduleFlush();
        if (settleAgain) {
          settleAgain = false;
          settle();
        }
        // Seqs drawn after the lock was granted may still leave a gap.
        watchGap();
      });
  };

  // Seqs waiting above a gap while the head does not move: a head read under the lock settles them.
  let gapTimer: NodeJS.Timeout | undefined;
  const watchGap = () => {
    if (gapTimer || !announced.stalled) return;
    const head = announced.value;
    gapTimer = setTimeout(() => {
      gapTimer = undefined;
      if (!announced.stalled) return;
      if (announced.value === head) settle();
      else watchGap();
    }, GAP_SETTLE_MS).unref();
  };

  const onPayload = (payload: string) => {
    const deactivated = /^deactivated:(\d+)$/.exec(payload);
    if (deactivated) {
      for (const listener of deactivationListeners) listener(Number(deactivated[1]));
      return;
    }
    // "<first>-<last>,...:<account>,<account>" or with "*" for every account, "?" for seqs that
    // did not fit; anything else (the listener's empty wake-up after a lost connection, or an
    // older version's payload) may stand for any commit.
    const match = /^(\?|\d+-\d+(?:,\d+-\d+)*):(\*|\d+(?:,\d+)*)$/.exec(payload);
    const accounts = !match || match[2] === '*' ? 'everyone' : match[2].split(',').map(Number);
    if (!match || match[1] === '?') {
      unplaced = widen(unplaced, accounts);
      settle();
      return;
    }
    const runs = match[1].split(',').map((run) => run.split('-').map(Number) as [number, number]);
    announced.announce(runs, accounts);
    scheduleFlush();
    watchGap();
  };

  const unlisten = await database.listen(CHANGES_CHANNEL, onPayload);
  // The first head: until it is read, nothing can be placed.
  settle();
  return {
    subscribe(onWake) {
      subscribers.add(onWake);
      return () => {
        subscribers.delete(onWake);
      };
    },
    head: () => announced.value,
    onDeactivated(listener) {
      deactivationListeners.add(listener);
      return () => {
        deactivationListeners.delete(listener);
      };
    },
    async quiet() {
      while (settling || gapTimer) await new Promise((resolve) => setTimeout(resolve, 10));
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      clearTimeout(gapTimer);
      subscribers.clear();
      deactivationListeners.clear();
      await Promise.all([unlisten(), reading]);
    },
  };
}
