/**
 * Work of concurrent callers done together. A call that finds fewer than `concurrency` runs in
 * progress starts one at once, so nobody waits for company; calls arriving meanwhile queue and
 * go together into the next free run. Under load, one round of statements then serves many
 * callers instead of each paying its own. With `minIntervalMs`, runs start at least that far
 * apart: a call soon after a start waits for the next one, with the calls arriving meanwhile
 * (a full run does not wait). `run` answers every item it is given (items carry their own
 * callbacks); an error it lets through fails nothing else.
 */
export function combining<T>(
  options: {
    concurrency: number;
    maxItems?: number;
    maxWeight?: number;
    weight?: (item: T) => number;
    /** A run still going after this long stops counting against `concurrency` (it waits for something, say a lock). */
    slowAfterMs?: number;
    /** Runs start at least this far apart, so that under a stream of calls each run carries several. */
    minIntervalMs?: number;
  },
  run: (items: T[]) => Promise<void>,
): (item: T) => void {
  const { concurrency, maxItems = Infinity, maxWeight = Infinity, weight = () => 1, slowAfterMs, minIntervalMs = 0 } = options;
  const queue: T[] = [];
  let running = 0;
  let lastStart = -Infinity;
  let due: NodeJS.Timeout | undefined;
  const pump = () => {
    while (running < concurrency && queue.length > 0) {
      const now = performance.now();
      const early = lastStart + minIntervalMs - now;
      if (early > 0 && queue.length < maxItems) {
        due ??= setTimeout(() => {
          due = undefined;
          pump();
        }, early);
        return;
      }
      lastStart = now;
      const taken = [queue.shift()!];
      let total = weight(taken[0]);
      while (queue.length > 0 && taken.length < maxItems && total + weight(queue[0]) <= maxWeight) {
        total += weight(queue[0]);
        taken.push(queue.shift()!);
      }
      running += 1;
      let counted = true;
      const release = () => {
        if (!counted) return;
        counted = false;
        running -= 1;
        pump();
      };
      const slow = slowAfterMs === undefined ? undefined : setTimeout(release, slowAfterMs);
      const done = () => {
        clearTimeout(slow);
        release();
      };
      run(taken).then(done, done);
    }
  };
  return (item) => {
    queue.push(item);
    pump();
  };
}

/** A promise with its settle functions, for handing to a combined run. */
export function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
