import { describe, expect, it } from 'vitest';
import { claimHasRole } from '../../server/auth/tokens.js';

describe('the sync role claim', () => {
  it.each([
    [['tourline-sync'], true],
    [['reader', 'tourline-sync'], true],
    ['tourline-sync', true],
    ['openid tourline-sync profile', true],
    ['tourline-sync-reader', false],
    [['tourline-syn'], false],
    [[['tourline-sync']], false],
    [{ 'tourline-sync': true }, false],
    [undefined, false],
    [42, false],
  ])('reads %j as holding the role: %s', (value, expected) => {
    expect(claimHasRole(value, 'tourline-sync')).toBe(expected);
  });
});
