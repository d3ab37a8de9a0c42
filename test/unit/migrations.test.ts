import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { migrationsFolder } from '../../server/db/migrate.js';

// Every pending migration runs in one transaction: a statement that writes rows there holds
// their locks, and its table's, until the last migration commits, while the old release waits.
const FROM = 13;
const writesRows = /^\s*(UPDATE|INSERT|DELETE)\b/im;

describe('the migrations from 0013 on', () => {
  const files = readdirSync(migrationsFolder).filter((f) => /^\d{4}_.*\.sql$/.test(f) && Number(f.slice(0, 4)) >= FROM);

  it.each(files)('%s changes the schema only; its data is filled by a backfill in batches (server/db/backfills.ts)', (file) => {
    const text = readFileSync(`${migrationsFolder}/${file}`, 'utf8')
      .split('\n')
      .filter((line) => !line.trim().startsWith('--'))
      .join('\n');
    expect(text).not.toMatch(writesRows);
  });
});
