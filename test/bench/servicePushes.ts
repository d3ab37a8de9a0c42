/**
 * A push's answer time as the service itself measured it (its request-duration histogram, read
 * at the edges of a measured window): from the request's arrival in the service to its answer,
 * without the time the load processes' own event loops add when they are busy. The load's
 * figure and this one side by side tell the service's latency from the load tool's.
 */
import { round } from './stats.js';

const BUCKET = 'tourline_http_request_duration_seconds_bucket';
const PUSH = { method: 'POST', route: '/sync/push', status: '200' };

/** Cumulative counts of successful pushes by upper bound in seconds (Infinity for `+Inf`). */
export type PushBuckets = Map<number, number>;

export async function readPushBuckets(metricsUrl: string): Promise<PushBuckets> {
  const text = await fetch(metricsUrl)
    .then((response) => (response.ok ? response.text() : ''))
    .catch(() => '');
  const buckets: PushBuckets = new Map();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${BUCKET}{`) || !Object.entries(PUSH).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    const le = /le="([^"]+)"/.exec(line)![1];
    buckets.set(le === '+Inf' ? Infinity : Number(le), Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return buckets;
}

export interface ServicePushes {
  count: number;
  /** The quantile interpolated within its bucket, as Prometheus's histogram_quantile does. */
  p99Ms: number;
  over50MsPct: number;
}

/** The pushes answered between two readings; undefined when the service measured none. */
export function pushesBetween(from: PushBuckets, to: PushBuckets): ServicePushes | undefined {
  const bounds = [...to.keys()].sort((a, b) => a - b);
  const counts = bounds.map((le) => (to.get(le) ?? 0) - (from.get(le) ?? 0));
  const count = counts.at(-1) ?? 0;
  if (count === 0) return undefined;
  const rank = 0.99 * count;
  const at = counts.findIndex((n) => n >= rank);
  const lower = at === 0 ? 0 : bounds[at - 1];
  const below = at === 0 ? 0 : counts[at - 1];
  // Past the last finite bound the quantile is only known to exceed it.
  const p99 = bounds[at] === Infinity ? lower : lower + (bounds[at] - lower) * ((rank - below) / Math.max(1, counts[at] - below));
  const within50 = counts[bounds.indexOf(0.05)] ?? 0;
  return { count, p99Ms: round(p99 * 1000), over50MsPct: round(((count - within50) / count) * 100, 2) };
}
