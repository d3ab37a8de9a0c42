import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SYNC_ROLE, TEST_ADMIN_KEY, useTestServer } from '../helpers/server.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsx = path.join(root, 'node_modules/.bin/tsx');

describe('npm run token', () => {
  const api = useTestServer('pglite');

  const run = (...args: string[]) =>
    promisify(execFile)(tsx, ['server/cli/token.ts', ...args], {
      cwd: root,
      env: { ...process.env, TOURLINE_URL: api.url, ADMIN_API_KEY: TEST_ADMIN_KEY },
    }).then(
      ({ stdout }) => ({ code: 0, stdout: stdout.trim(), stderr: '' }),
      (error) => ({ code: error.code as number, stdout: '', stderr: error.stderr as string }),
    );
  const claims = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));

  it('prints a driver token, and with --role a token of that role that may read any account', async () => {
    await api.seedAccount(7950);
    const driver = await run('7950');
    expect(driver.code).toBe(0);
    expect(claims(driver.stdout).roles).toBeUndefined();
    expect((await api.get('/accounts/1', { token: driver.stdout })).status).toBe(404);

    const sync = await run('7950', '--role', SYNC_ROLE, '--role', 'viewer');
    expect(sync.code).toBe(0);
    expect(claims(sync.stdout).roles).toEqual([SYNC_ROLE, 'viewer']);
    await api.seedAccount(7951);
    expect((await api.get('/accounts/7951', { token: sync.stdout })).status).toBe(200);
  });

  it('prints a back-office token with --back-office that the admin endpoints take and the driver endpoints refuse', async () => {
    const result = await run('--back-office', 'Frau Weber');
    expect(result.code).toBe(0);
    expect(claims(result.stdout)).toMatchObject({ name: 'Frau Weber', roles: ['tourline-back-office'] });
    expect(claims(result.stdout).personalnummer).toBeUndefined();
    expect((await api.get('/admin/reviews', { token: result.stdout })).status).toBe(200);
    expect((await api.get('/me/tours', { token: result.stdout })).status).toBe(401);
  });

  it.each([
    [[]],
    [['x']],
    [['7950', '7951']],
    [['7950', '--role']],
    [['7950', '--admin']],
    [['--back-office']],
    [['--back-office', ' ']],
    [['7950', '--back-office', 'Frau Weber']],
    [['--back-office', 'Frau Weber', '--role', 'x']],
  ])('refuses %j with its usage', async (args) => {
    const result = await run(...args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('usage: npm run token');
  });
});
