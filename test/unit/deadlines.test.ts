import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Deadlines } from '../../server/http/deadlines.js';

describe('Deadlines', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Deadlines that record when each member came due, in ms from the start. */
  function recording() {
    const start = Date.now();
    const calls: [string, number][] = [];
    const deadlines = new Deadlines<string>((member) => calls.push([member, Date.now() - start]));
    return { deadlines, calls, start };
  }

  it('calls each member at its own time, in order, with one timer for all', () => {
    const { deadlines, calls, start } = recording();
    deadlines.set('c', start + 300);
    deadlines.set('a', start + 100);
    deadlines.set('b', start + 200);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(99);
    expect(calls).toEqual([]);
    vi.advanceTimersByTime(1000);
    expect(calls).toEqual([
      ['a', 100],
      ['b', 200],
      ['c', 300],
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('never calls a deleted member, and a new time replaces the old one', () => {
    const { deadlines, calls, start } = recording();
    deadlines.set('gone', start + 100);
    deadlines.set('moved', start + 150);
    deadlines.delete('gone');
    deadlines.set('moved', start + 400);
    vi.advanceTimersByTime(1000);
    expect(calls).toEqual([['moved', 400]]);
  });

  it('calls a member whose time has passed at the next turn', () => {
    const { deadlines, calls, start } = recording();
    deadlines.set('late', start - 5000);
    expect(calls).toEqual([]);
    vi.advanceTimersByTime(0);
    expect(calls).toEqual([['late', 0]]);
  });

  it('keeps the order when most members leave before their time', () => {
    const { deadlines, calls, start } = recording();
    const times = Array.from({ length: 5000 }, (_, i) => ({ member: `m${i}`, at: start + 1 + ((i * 7919) % 5000) }));
    for (const { member, at } of times) deadlines.set(member, at);
    const staying = times.filter((_, i) => i % 500 === 0);
    for (const { member } of times) if (!staying.some((s) => s.member === member)) deadlines.delete(member);
    // Members that come and go meanwhile make the heap rebuild without the departed.
    for (let i = 0; i < 3000; i++) {
      deadlines.set(`churn${i}`, start + 10_000);
      deadlines.delete(`churn${i}`);
    }
    vi.advanceTimersByTime(20_000);
    expect(calls).toEqual(staying.sort((x, y) => x.at - y.at).map(({ member, at }) => [member, at - start]));
  });

  it('reaches a time beyond setTimeout’s longest delay', () => {
    const { deadlines, calls, start } = recording();
    const far = 2 ** 31 + 60_000;
    deadlines.set('far', start + far);
    vi.advanceTimersByTime(2 ** 31 - 1);
    expect(calls).toEqual([]);
    vi.advanceTimersByTime(60_001);
    expect(calls).toEqual([['far', far]]);
  });

  it('keeps its timer when a member’s call throws', () => {
    const start = Date.now();
    const calls: string[] = [];
    const deadlines = new Deadlines<string>((member) => {
      calls.push(member);
      if (member === 'throws') throw new Error('boom');
    });
    deadlines.set('throws', start + 100);
    deadlines.set('later', start + 200);
    expect(() => vi.advanceTimersByTime(100)).toThrow('boom');
    vi.advanceTimersByTime(100);
    expect(calls).toEqual(['throws', 'later']);
  });

  it('stops: nothing comes due after', () => {
    const { deadlines, calls, start } = recording();
    deadlines.set('a', start + 100);
    deadlines.stop();
    vi.advanceTimersByTime(1000);
    expect(calls).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
