import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { adminKeyMatcher, resolveAdminKeys } from '../../server/auth/adminKey.js';

describe('adminKeyMatcher', () => {
  const matches = adminKeyMatcher(['correct-admin-key-0123456789']);

  it('accepts the configured key', () => {
    expect(matches('correct-admin-key-0123456789')).toBe(true);
  });

  it('accepts each of several keys, so a key can be rotated without a gap', () => {
    const rotating = adminKeyMatcher(['old-admin-key-0123456789', 'new-admin-key-0123456789']);
    expect(rotating('old-admin-key-0123456789')).toBe(true);
    expect(rotating('new-admin-key-0123456789')).toBe(true);
    expect(rotating('other-admin-key-012345678')).toBe(false);
  });

  it.each([
    ['a wrong key of the same length', 'correct-admin-key-0123456780'],
    ['a shorter key', 'correct'],
    ['a longer key', 'correct-admin-key-0123456789-and-more'],
    ['an empty key', ''],
    ['no key', undefined],
  ])('refuses %s', (_name, candidate) => {
    expect(matches(candidate)).toBe(false);
  });
});

describe('resolveAdminKeys', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tourline-admin-key-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prefers the configured key and writes nothing', () => {
    expect(resolveAdminKeys(['configured-admin-key-0123'], dir)).toEqual({ keys: ['configured-admin-key-0123'], generated: false });
  });

  it('generates a key once, keeps it readable only by the owner and reuses it', () => {
    const first = resolveAdminKeys(undefined, dir);
    expect(first.generated).toBe(true);
    expect(first.keys[0].length).toBeGreaterThanOrEqual(32);
    const file = path.join(dir, 'admin-api-key');
    expect(readFileSync(file, 'utf8')).toBe(first.keys[0]);
    expect(statSync(file).mode & 0o077).toBe(0);
    expect(resolveAdminKeys(undefined, dir)).toEqual({ keys: first.keys, generated: false });
  });
});
