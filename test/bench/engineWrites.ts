/**
 * The engine's write timings, read from the service's Prometheus metrics at the edges of a
 * measured window: how long its requests waited for the writer and how long the writer's runs
 * took. A version of the service without them says so.
 */
import { sample } from '../helpers/prometheus.js';
import { round } from './stats.js';

export interface EngineWrites {
  count: number;
  waitSeconds: number;
  runSeconds: number;
  /** Requests that waited, or whose run took, at most 50 ms (the histograms' bucket). */
  waitedWithin50: number;
  ranWithin50: number;
}

const WAIT = 'tourline_engine_write_wait_seconds';
const RUN = 'tourline_engine_write_seconds';

/** The timings so far, or undefined when the service has none. */
export async function readEngineWrites(metricsUrl: string): Promise<EngineWrites | undefined> {
  const text = await fetch(metricsUrl)
    .then((response) => (response.ok ? response.text() : ''))
    .catch(() => '');
  const count = sample(text, `${WAIT}_count`);
  if (count === undefined) return undefined;
  return {
    count,
    waitSeconds: sample(text, `${WAIT}_sum`) ?? 0,
    runSeconds: sample(text, `${RUN}_sum`) ?? 0,
    waitedWithin50: sample(text, `${WAIT}_bucket`, { le: '0.05' }) ?? 0,
    ranWithin50: sample(text, `${RUN}_bucket`, { le: '0.05' }) ?? 0,
  };
}

export function describeEngineWrites(from: EngineWrites | undefined, to: EngineWrites | undefined): string {
  if (!from || !to) return 'the writer is not timed by this version of the service';
  const count = to.count - from.count;
  if (count === 0) return 'no writes';
  const meanMs = (seconds: number) => round((seconds * 1000) / count, 1);
  const over50 = (within: number) => `${round(((count - within) / count) * 100, 1)} %`;
  return (
    `${count} writes waited for the writer ${meanMs(to.waitSeconds - from.waitSeconds)} ms on average ` +
    `(${over50(to.waitedWithin50 - from.waitedWithin50)} over 50 ms), its runs took ${meanMs(to.runSeconds - from.runSeconds)} ms ` +
    `(${over50(to.ranWithin50 - from.ranWithin50)} over 50 ms)`
  );
}
