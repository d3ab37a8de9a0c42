import { describe, expect, it } from 'vitest';
import { changeLogValues, MAX_AUDIENCE_CHARS, type ChangeRecord } from '../../server/engine/changeLog.js';

const changesFor = (accounts: number[]): ChangeRecord[] =>
  accounts.map((accountId) => ({ entity: 'article', op: 'upsert', id: 'a1', accountId }));

describe('the audience of a change-log NOTIFY', () => {
  it('names the accounts a change reaches, each once', () => {
    expect(changeLogValues(changesFor([1001, 1002, 1001])).audience).toBe('1001,1002');
  });

  it('is "*" when any change is for every account', () => {
    expect(changeLogValues([...changesFor([1001]), { entity: 'paymentMethod', op: 'upsert', id: 'p1' }]).audience).toBe('*');
  });

  it('names accounts up to the size that keeps the payload below 8000 bytes, and says "*" past it', () => {
    // Seven-digit Personalnummern and a comma: 8 characters each.
    const fits = Array.from({ length: Math.floor((MAX_AUDIENCE_CHARS + 1) / 8) }, (_, i) => 1_000_000 + i);
    const named = changeLogValues(changesFor(fits)).audience;
    expect(named.split(',')).toHaveLength(fits.length);
    expect(`${Number.MAX_SAFE_INTEGER}:${named}`.length).toBeLessThan(8000);
    expect(changeLogValues(changesFor([...fits, 2_000_000])).audience).toBe('*');
  });
});
