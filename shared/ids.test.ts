import { describe, expect, it } from 'vitest';
import { newId, timeOrderedIds } from './ids.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** The 48-bit Unix milliseconds an id starts with. */
const msOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
const counterOf = (id: string) => parseInt(id.slice(15, 18), 16);

describe('time-ordered ids (UUIDv7)', () => {
  it('carry version 7, the RFC 9562 variant and the time they were made', () => {
    const before = Date.now();
    const id = newId();
    expect(id).toMatch(UUID_V7);
    expect(msOf(id)).toBeGreaterThanOrEqual(before);
    expect(msOf(id)).toBeLessThanOrEqual(Date.now());
  });

  it('write the milliseconds big-endian over all 48 bits', () => {
    const ms = 0xfedc_ba98_7654;
    const id = timeOrderedIds(() => ms)();
    expect(id.slice(0, 13)).toBe('fedcba98-7654');
    expect(msOf(id)).toBe(ms);
  });

  it('sort by the millisecond they were made in, whatever their random bits', () => {
    let ms = Date.UTC(2026, 0, 1);
    const random = (bytes: Uint8Array) => bytes.fill(0xff - (ms % 256));
    const next = timeOrderedIds(() => ms, random);
    const ids = Array.from({ length: 50 }, () => {
      ms += 1 + (ms % 3);
      return next();
    });
    expect([...ids].sort()).toEqual(ids);
    ids.forEach((id) => expect(id).toMatch(UUID_V7));
  });

  it('count on within one millisecond, and move the time ahead when the counter runs out', () => {
    const ms = Date.UTC(2026, 5, 1);
    const next = timeOrderedIds(
      () => ms,
      (bytes) => bytes.fill(0xff),
    );
    const ids = Array.from({ length: 5000 }, next);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(counterOf(ids[0])).toBe(0x7ff);
    expect([counterOf(ids[0x800]), msOf(ids[0x800])]).toEqual([0xfff, ms]);
    expect(msOf(ids[0x801])).toBe(ms + 1);
    expect(msOf(ids.at(-1)!)).toBeLessThanOrEqual(ms + 3);
  });

  it('keep increasing when the clock steps back', () => {
    const times = [1000, 1000, 900, 950, 1001];
    const next = timeOrderedIds(() => times.shift()!);
    const ids = Array.from({ length: 5 }, next);
    expect([...ids].sort()).toEqual(ids);
    expect(ids.slice(0, 4).map(msOf)).toEqual([1000, 1000, 1000, 1000]);
    expect(msOf(ids[4])).toBe(1001);
  });

  it('are unique and increasing in a burst', () => {
    const ids = Array.from({ length: 100_000 }, newId);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    ids.slice(0, 1000).forEach((id) => expect(id).toMatch(UUID_V7));
  });
});
