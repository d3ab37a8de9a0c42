import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresDatabase } from '../helpers/databases.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsx = path.join(root, 'node_modules/.bin/tsx');
/** Nothing listens there: every dependency named with it is out of reach. */
const NOBODY = 'http://127.0.0.1:9';

const run = (env: Record<string, string>) =>
  promisify(execFile)(tsx, ['server/cli/doctor.ts'], { cwd: root, env: { PATH: process.env.PATH, ...env } }).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: `${error.stdout}${error.stderr}` }),
  );

describe('npm run doctor', { timeout: 60_000 }, () => {
  const dirs: string[] = [];
  afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  it('passes on a fresh machine and on PostgreSQL, naming what it asked, with exit code 0', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tourline-doctor-'));
    dirs.push(dataDir);
    const embedded = await run({ DATA_DIR: dataDir });
    expect(embedded.code).toBe(0);
    expect(embedded.stdout).toContain(`ok    database  PGlite in ${dataDir}`);
    expect(embedded.stdout).toContain(`ok    documents local ${dataDir}/documents`);
    expect(embedded.stdout).toMatch(/every check passed\n$/);

    const postgres = await run({ DATA_DIR: dataDir, DATABASE_URL: await createPostgresDatabase() });
    expect(postgres.code).toBe(0);
    expect(postgres.stdout).toMatch(/ok {4}database {2}PostgreSQL 127\.0\.0\.1:\d+\/t_\w+: PostgreSQL \d+/);
  });

  it('says in words what is out of reach (database, bucket, issuer, ERP) and exits 1', async () => {
    const result = await run({
      DATABASE_URL: 'postgres://tourline:secret-password@127.0.0.1:9/tourline',
      DOCUMENT_STORE: 's3',
      S3_BUCKET: 'tourline-missing',
      S3_ENDPOINT: NOBODY,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: 'id',
      AWS_SECRET_ACCESS_KEY: 'secret',
      AUTH_MODE: 'oidc',
      OIDC_ISSUER: `${NOBODY}/realms/drivers`,
      OIDC_AUDIENCE: 'tourline',
      OIDC_TIMEOUT_MS: '500',
      ERP_MODE: 'http',
      ERP_BASE_URL: `${NOBODY}/erp`,
    });
    expect(result.code).toBe(1);
    const lines = result.stdout.split('\n');
    expect(lines).toContainEqual(expect.stringMatching(/^FAIL {2}database {2}PostgreSQL 127\.0\.0\.1:9\/tourline: connect ECONNREFUSED/));
    expect(lines).toContainEqual(
      expect.stringMatching(/^FAIL {2}documents s3 bucket tourline-missing at http:\/\/127\.0\.0\.1:9 .*: Document store upload failed/),
    );
    expect(lines).toContainEqual(`FAIL  issuer    ${NOBODY}/realms/drivers: OIDC discovery: fetch failed`);
    expect(lines).toContainEqual(expect.stringMatching(/^FAIL {2}erp {7}http:\/\/127\.0\.0\.1:9\/erp: ERP tour read failed/));
    expect(lines).toContain('4 checks failed');
    expect(result.stdout).not.toContain('secret-password');
  });

  it('refuses settings the service would refuse, naming the variable, with exit code 2', async () => {
    const result = await run({ DOCUMENT_STORE: 's3' });
    expect(result.code).toBe(2);
    expect(result.stdout).toContain('S3_BUCKET');
  });
});
