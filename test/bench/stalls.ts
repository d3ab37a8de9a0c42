/**
 * Where a process's event loop stood still, and which garbage collections paused it: a timer that
 * should fire every few ms notes each time it came late, and a performance observer notes each
 * collection. The times are monotonic ms, comparable between the processes of one host.
 */
import { readFileSync } from 'node:fs';
import { PerformanceObserver, constants, performance } from 'node:perf_hooks';
import { monotonicMs } from './stats.js';

/** A push slower than this is looked up among the stalls. */
export const SLOW_PUSH_MS = 100;

export interface Stalls {
  /** [when it began, how long, ms] for each stall longer than the threshold. */
  stalls: [number, number][];
  /** [when it began, how long, ms, kind] for each full collection and each other one longer than the threshold. */
  collections: [number, number, string][];
}

const kinds: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
};

export function watchStalls(thresholdMs = 50, tickMs = 5): { take(): Stalls } {
  let seen: Stalls = { stalls: [], collections: [] };
  // performance.now() counts from this process's origin; the offset makes it monotonic host time.
  const offset = monotonicMs() - performance.now();
  let last = monotonicMs();
  setInterval(() => {
    const now = monotonicMs();
    const late = now - last - tickMs;
    if (late > thresholdMs) seen.stalls.push([last + tickMs, late]);
    last = now;
  }, tickMs).unref();
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
      // Every full collection: its pause is short, but it ends marking steps that held the thread before it.
      if (entry.duration <= thresholdMs && kind !== constants.NODE_PERFORMANCE_GC_MAJOR) continue;
      seen.collections.push([entry.startTime + offset, entry.duration, kinds[kind ?? -1] ?? String(kind)]);
    }
  }).observe({ entryTypes: ['gc'] });
  return {
    take() {
      const taken = seen;
      seen = { stalls: [], collections: [] };
      return taken;
    },
  };
}

/**
 * One line: how many stalls, the longest, the time they took in all, how many of them a full
 * collection's pause ended, and the collections over the threshold.
 */
export function describeStalls({ stalls, collections }: Stalls, thresholdMs = 50): string {
  const total = stalls.reduce((n, [, ms]) => n + ms, 0);
  const longest = Math.max(0, ...stalls.map(([, ms]) => ms));
  const full = collections.filter(([, , kind]) => kind === 'major').map(([at, ms]): [number, number] => [at, ms]);
  const withFull = overlapping(stalls, { stalls: full, collections: [] });
  const long = collections.filter(([, ms]) => ms > thresholdMs);
  const gcTotal = long.reduce((n, [, ms]) => n + ms, 0);
  const gcKinds = [...new Set(long.map(([, , kind]) => kind))].join(', ');
  return (
    `${stalls.length} stalls (longest ${longest.toFixed(0)} ms, ${total.toFixed(0)} ms in all; ${withFull} with a full collection in them), ` +
    `${full.length} full collections, ${long.length} long collections (${gcTotal.toFixed(0)} ms${gcKinds ? `; ${gcKinds}` : ''})`
  );
}

/** How many of `spans` ([start, ms]) overlap one of the stalls. */
export function overlapping(spans: [number, number][], { stalls }: Stalls): number {
  return spans.filter(([at, ms]) => stalls.some(([from, long]) => from < at + ms && from + long > at)).length;
}

/** How long a thread ran on a CPU, and waited for one while it could run, in ms. */
export interface ThreadTimes {
  runMs: number;
  waitMs: number;
}

/**
 * This thread's times since it started, from the scheduler's own account
 * (`/proc/thread-self/schedstat`, Linux only); undefined elsewhere. Called on the main thread, the
 * wait is the event loop's: latency that costs the process no CPU.
 */
export function threadTimes(): ThreadTimes | undefined {
  try {
    const [run, wait] = readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ').map(Number);
    return { runMs: run / 1e6, waitMs: wait / 1e6 };
  } catch {
    return undefined;
  }
}

/** The times between two readings of `threadTimes`. */
export const timesBetween = (from: ThreadTimes | undefined, to: ThreadTimes | undefined): ThreadTimes | undefined =>
  from && to && { runMs: to.runMs - from.runMs, waitMs: to.waitMs - from.waitMs };

/** The host's CPU counters (jiffies since boot: busy, of which system and softirq, and steal), from /proc/stat; undefined elsewhere. */
export function hostCpu(): { busy: number; system: number; steal: number; total: number } | undefined {
  try {
    const [user, nice, system, idle, iowait, irq, softirq, steal] = readFileSync('/proc/stat', 'latin1')
      .split('\n')[0]
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    const total = user + nice + system + idle + iowait + irq + softirq + steal;
    return { busy: total - idle - iowait, system: system + irq + softirq, steal, total };
  } catch {
    return undefined;
  }
}

/** Between two readings of hostCpu: how busy the host was, in % of all its cores. */
export function describeHostCpu(from: ReturnType<typeof hostCpu>, to: ReturnType<typeof hostCpu>): string {
  if (!from || !to) return 'host CPU unknown';
  const total = to.total - from.total;
  const pct = (n: number) => `${Math.round((n / total) * 100)} %`;
  return `host ${pct(to.busy - from.busy)} busy (system ${pct(to.system - from.system)}, steal ${pct(to.steal - from.steal)})`;
}
