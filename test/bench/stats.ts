/** Nearest-rank percentile of unsorted samples; 0 for none. */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return 0;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export const round = (value: number, digits = 1) => Number(value.toFixed(digits));

export function latencies(samples: number[]) {
  return { p50_ms: round(percentile(samples, 50)), p99_ms: round(percentile(samples, 99)) };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Milliseconds on the machine's monotonic clock, comparable between processes on one host. */
export const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6;
