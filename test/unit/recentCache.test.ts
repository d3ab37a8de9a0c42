import { describe, expect, it } from 'vitest';
import { RecentCache } from '../../server/auth/recentCache.js';

describe('RecentCache', () => {
  it('holds as many entries as its capacity, every one of them', () => {
    const cache = new RecentCache<string, number>(20_000);
    for (let i = 0; i < 20_000; i++) cache.set(`token-${i}`, i);
    expect(cache.size).toBe(20_000);
    for (let i = 0; i < 20_000; i++) expect(cache.get(`token-${i}`)).toBe(i);
  });

  it('never grows past its capacity and drops the entry used longest ago', () => {
    const cache = new RecentCache<string, number>(3);
    cache.set('a', 1);
    cache.set('b', 2);
    cache.set('c', 3);
    // A hit makes `a` the most recent: `b` goes first.
    expect(cache.get('a')).toBe(1);
    cache.set('d', 4);
    expect(cache.size).toBe(3);
    expect(cache.get('b')).toBeUndefined();
    expect([cache.get('a'), cache.get('c'), cache.get('d')]).toEqual([1, 3, 4]);
    // Setting a held key again replaces it without dropping another.
    cache.set('c', 30);
    expect(cache.size).toBe(3);
    expect(cache.get('a')).toBe(1);
    cache.delete('a');
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(2);
  });

  it('refuses a capacity below one', () => {
    expect(() => new RecentCache(0)).toThrow(/at least one/);
  });
});
