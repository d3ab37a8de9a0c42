import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { README, errorTable, withErrorTable } from '../../server/cli/errorTable.js';
import { errorCatalogue } from '../../server/errors.js';

describe('the error table of the README', () => {
  it('is the one the catalogue gives (npm run docs:errors writes it)', () => {
    const readme = readFileSync(README, 'utf8');
    expect(withErrorTable(readme)).toBe(readme);
  });

  it('has one row per code of the catalogue, with its status', () => {
    const rows = errorTable().split('\n').slice(2);
    expect(rows).toHaveLength(Object.keys(errorCatalogue).length);
    for (const [code, { status }] of Object.entries(errorCatalogue))
      expect(rows).toContainEqual(expect.stringContaining(`| \`${code}\` | ${status} |`));
  });

  it('refuses a text without its markers instead of losing the table', () => {
    expect(() => withErrorTable('# no table here')).toThrow(/markers/);
  });
});
