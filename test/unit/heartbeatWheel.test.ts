import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { HeartbeatWheel } from '../../server/http/heartbeatWheel.js';

describe('HeartbeatWheel', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('visits every member once per interval, a small slice at each tick', () => {
    const visits = new Map<number, number>();
    let rounds = 0;
    const perTick: number[] = [];
    let inTick = 0;
    const wheel = new HeartbeatWheel<number>(
      1000,
      (n) => {
        visits.set(n, (visits.get(n) ?? 0) + 1);
        inTick += 1;
      },
      () => {
        rounds += 1;
      },
    );
    for (let n = 0; n < 1000; n++) wheel.add(n);
    for (let tick = 0; tick < 200; tick++) {
      inTick = 0;
      vi.advanceTimersByTime(10);
      perTick.push(inTick);
    }
    wheel.stop();
    expect(rounds).toBe(2);
    expect([...visits.values()].every((count) => count === 2)).toBe(true);
    expect(visits.size).toBe(1000);
    // 100 slices of 10 members, not 1000 at once.
    expect(Math.max(...perTick)).toBe(10);
  });

  it('stops visiting a member once it is deleted, and after stop', () => {
    const visited: string[] = [];
    const wheel = new HeartbeatWheel<string>(
      100,
      (m) => visited.push(m),
      () => undefined,
    );
    wheel.add('a');
    wheel.add('b');
    wheel.delete('a');
    vi.advanceTimersByTime(100);
    expect(visited).toEqual(['b']);
    wheel.stop();
    vi.advanceTimersByTime(1000);
    expect(visited).toEqual(['b']);
  });
});
