import { describe, expect, it, vi } from 'vitest';
import { combining, deferred } from '../../server/db/combining.js';

/** A run that records what it was given and finishes when told to. */
function recorder() {
  const runs: { items: number[]; finish: ReturnType<typeof deferred<void>> }[] = [];
  const run = (items: number[]) => {
    const finish = deferred<void>();
    runs.push({ items, finish });
    return finish.promise;
  };
  return { runs, run };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('combining', () => {
  it('starts a call at once when a run is free and combines the calls that arrive meanwhile', async () => {
    const { runs, run } = recorder();
    const submit = combining<number>({ concurrency: 1 }, run);
    submit(1);
    expect(runs.map((r) => r.items)).toEqual([[1]]);
    submit(2);
    submit(3);
    submit(4);
    expect(runs).toHaveLength(1);
    runs[0].finish.resolve();
    await settle();
    expect(runs.map((r) => r.items)).toEqual([[1], [2, 3, 4]]);
  });

  it('stops counting a run against `concurrency` once it is slower than `slowAfterMs`, and counts it once', async () => {
    const { runs, run } = recorder();
    const submit = combining<number>({ concurrency: 1, slowAfterMs: 20 }, run);
    submit(1);
    submit(2);
    expect(runs.map((r) => r.items)).toEqual([[1]]);
    await new Promise((resolve) => setTimeout(resolve, 40));
    // The slow run (waiting for a lock, say) no longer holds the only slot.
    expect(runs.map((r) => r.items)).toEqual([[1], [2]]);
    runs[0].finish.resolve();
    runs[1].finish.resolve();
    await settle();
    // Their ends freed the one slot once: a new call takes it, the next waits.
    submit(3);
    submit(4);
    expect(runs.map((r) => r.items)).toEqual([[1], [2], [3]]);
  });

  it('keeps up to `concurrency` runs going and no run heavier than `maxWeight`', async () => {
    const { runs, run } = recorder();
    const submit = combining<number>({ concurrency: 2, maxWeight: 5, weight: (n) => n }, run);
    for (const n of [1, 1, 2, 2, 2, 4, 1]) submit(n);
    expect(runs.map((r) => r.items)).toEqual([[1], [1]]);
    runs[0].finish.resolve();
    await settle();
    expect(runs.map((r) => r.items)).toEqual([[1], [1], [2, 2]]);
    runs[1].finish.resolve();
    runs[2].finish.resolve();
    await settle();
    // What would make a run too heavy waits for the next one.
    expect(runs.slice(3).map((r) => r.items)).toEqual([[2], [4, 1]]);
  });

  it('puts no more than `maxItems` calls into one run', async () => {
    const { runs, run } = recorder();
    const submit = combining<number>({ concurrency: 1, maxItems: 3, maxWeight: 100, weight: (n) => n }, run);
    for (const n of [1, 1, 1, 1, 1, 1, 1, 1]) submit(n);
    for (let i = 0; i < 3; i++) {
      runs[i].finish.resolve();
      await settle();
    }
    expect(runs.map((r) => r.items.length)).toEqual([1, 3, 3, 1]);
  });

  it('starts runs at least `minIntervalMs` apart, a full run and the first after a quiet spell at once', async () => {
    // Time moves only when the test says so: a busy machine cannot make a wait look like a quiet spell.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const { runs, run } = recorder();
      const submit = combining<number>({ concurrency: 1, maxItems: 3, minIntervalMs: 30 }, run);
      submit(1);
      expect(runs.map((r) => r.items)).toEqual([[1]]);
      runs[0].finish.resolve();
      await settle();
      // The run is done, but the next may start only 30 ms after it: calls arriving meanwhile go together.
      vi.advanceTimersByTime(10);
      submit(2);
      vi.advanceTimersByTime(10);
      submit(3);
      expect(runs).toHaveLength(1);
      vi.advanceTimersByTime(10);
      expect(runs.map((r) => r.items)).toEqual([[1], [2, 3]]);
      runs[1].finish.resolve();
      await settle();
      // Three calls fill a run: waiting would only delay them.
      for (const n of [4, 5, 6]) submit(n);
      expect(runs.map((r) => r.items)).toEqual([[1], [2, 3], [4, 5, 6]]);
      runs[2].finish.resolve();
      await settle();
      vi.advanceTimersByTime(30);
      submit(7);
      expect(runs.map((r) => r.items)).toEqual([[1], [2, 3], [4, 5, 6], [7]]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('goes on with the queue after a run failed', async () => {
    const { runs, run } = recorder();
    const submit = combining<number>({ concurrency: 1 }, run);
    submit(1);
    submit(2);
    runs[0].finish.reject(new Error('database gone'));
    await settle();
    expect(runs.map((r) => r.items)).toEqual([[1], [2]]);
  });
});
