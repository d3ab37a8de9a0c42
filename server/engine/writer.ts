import { combining, deferred } from '../db/combining.js';
import { isDatabaseUnavailable } from '../db/availability.js';
import type { Db } from '../db/client.js';
import { constraintViolation, isLockTimeout } from '../db/errors.js';
import type { ApplyOptions, Entry } from './apply.js';
import { applyInTransaction, refusal } from './eventTransaction.js';
import { ConcurrentDuplicate } from './workingSet.js';

/** Neither answered nor refused by a transaction that committed. */
const unanswered = (entry: Entry) => !entry.result && !entry.refused;

interface Request {
  entries: Entry[];
  done: ReturnType<typeof deferred<void>>;
  /** performance.now() when it was queued. */
  queuedAt: number;
  onWrite: ApplyOptions['onWrite'];
}

/** How long requests that go together wait for a row lock before each is tried alone. */
const COMBINED_LOCK_WAIT_MS = 100;
/** After this long, a run (waiting for a lock, say) no longer holds the writer: another may start. */
const SLOW_RUN_MS = 50;
/**
 * Runs start at least this far apart. At hundreds of pushes a second a run then carries three
 * requests rather than two or one, which saves PostgreSQL about a tenth of its CPU per push; a
 * quiet service starts each push at once. A longer interval saves more, but every push under
 * load waits longer for it (measured in 5e35a1a).
 */
const RUN_INTERVAL_MS = 8;

/**
 * One writer: requests that arrive while it is busy are combined into one transaction, so under
 * many small concurrent pushes a handful of statements carries many requests (a second writer
 * combined less and cost PostgreSQL a fifth more CPU per push, measured in 61be886). At most 16
 * go together: a wave of small pushes then goes in several short transactions, whose first
 * answers need not wait for the last requests' writes; a cap on events instead would keep large
 * batches from ever going together (measured in the commit history). A failure of the
 * combined work leaves each request to fail or succeed on its own.
 *
 * A delivery locked elsewhere (a long transaction, another instance) must not hold up other
 * drivers' pushes. A request that goes alone waits for its locks in order, but after
 * SLOW_RUN_MS it stops holding the writer and the next run starts beside it. Requests that go
 * together wait for a lock only briefly (COMBINED_LOCK_WAIT_MS); after a lock timeout each is
 * tried alone, briefly again, and one that still meets the lock waits in the patient lane, up to
 * the session's lock timeout.
 */
function createWriter(db: Db) {
  const patient = combining<Request>({ concurrency: 4, maxItems: 1 }, async ([r]) => {
    await applyBatch(db, r.entries.filter(unanswered)).then(r.done.resolve, r.done.reject);
  });
  const options = {
    concurrency: 1,
    maxItems: 16,
    maxWeight: 2000,
    weight: (r: Request) => r.entries.length,
    slowAfterMs: SLOW_RUN_MS,
    minIntervalMs: RUN_INTERVAL_MS,
  };
  const run = async (requests: Request[]) => {
    if (requests.length === 1) {
      await applyBatch(db, requests[0].entries).then(requests[0].done.resolve, requests[0].done.reject);
      return;
    }
    try {
      await applyBatch(
        db,
        requests.flatMap((r) => r.entries),
        COMBINED_LOCK_WAIT_MS,
      );
      for (const r of requests) r.done.resolve();
      return;
    } catch {
      // Each on its own below.
    }
    for (const r of requests) {
      // Entries answered by a transaction that committed keep that answer.
      await applyBatch(db, r.entries.filter(unanswered), COMBINED_LOCK_WAIT_MS).then(r.done.resolve, (error: unknown) =>
        isLockTimeout(error) ? patient(r) : r.done.reject(error),
      );
    }
  };
  return combining<Request>(options, async (requests) => {
    const started = performance.now();
    await run(requests);
    const ran = (performance.now() - started) / 1000;
    for (const r of requests) r.onWrite?.({ waited: (started - r.queuedAt) / 1000, ran });
  });
}

const writers = new WeakMap<Db, ReturnType<typeof createWriter>>();

export function submit(db: Db, entries: Entry[], onWrite: ApplyOptions['onWrite']): Promise<void> {
  let write = writers.get(db);
  if (!write) {
    write = createWriter(db);
    writers.set(db, write);
  }
  const done = deferred<void>();
  write({ entries, done, queuedAt: performance.now(), onWrite });
  return done.promise;
}

/**
 * The whole work in one transaction. If that transaction fails as a whole (a concurrent copy of
 * an id on another delivery, a database error), each half of the events, in order, gets a
 * transaction of its own, and so on down to single events, so that one bad event cannot take the
 * others with it.
 */
async function applyBatch(db: Db, entries: Entry[], lockWaitMs?: number) {
  if (entries.length === 0) return;
  try {
    await applyInTransaction(db, entries, lockWaitMs);
    return;
  } catch (error) {
    // Not the events' fault: splitting them would only try the database again and again.
    if (isDatabaseUnavailable(error)) throw error;
    const violation = constraintViolation(error)?.kind;
    if (entries.length > 1) {
      const half = Math.ceil(entries.length / 2);
      await applyBatch(db, entries.slice(0, half), lockWaitMs);
      await applyBatch(db, entries.slice(half), lockWaitMs);
    } else if (error instanceof ConcurrentDuplicate) {
      // Its id committed meanwhile with another delivery's event: afresh, the event finds it recorded.
      await applyInTransaction(db, entries, lockWaitMs);
    } else if (violation === 'unique') {
      // An id the client chose (a note's) is taken by a row this event cannot see: another delivery's.
      entries[0].result = refusal(entries[0].event, {
        code: 'conflict',
        reason: 'conflict',
        message: 'An id this event brings is already taken',
      });
    } else if (violation === 'foreign_key') {
      // A payment method or service looked up in the transaction was deleted before its write.
      entries[0].result = refusal(entries[0].event, {
        code: 'not_found',
        reason: 'not_found',
        message: 'A payment method or service the event names was deleted meanwhile',
      });
    } else {
      throw error;
    }
  }
}
