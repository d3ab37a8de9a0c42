import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { freePort } from '../helpers/embeddedPostgres.js';
import { startTestServer } from '../helpers/server.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('npm run issuer', { timeout: 60_000 }, () => {
  it('starts a standalone issuer whose driver and back-office tokens a production-mode Tourline accepts', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tourline-issuer-'));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const child = spawn(path.join(root, 'node_modules/.bin/tsx'), ['server/cli/issuer.ts'], {
      cwd: root,
      env: { PATH: process.env.PATH, DATA_DIR: dataDir, ISSUER_PORT: String(port), ISSUER_URL: url, ISSUER_KEY: 'staging-key-0123456789' },
    });
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes(`Issuer ${url}`) && resolve());
        child.once('exit', (code) => reject(new Error(`the issuer exited with ${code}`)));
      });
      const mint = (body: unknown, key = 'staging-key-0123456789') =>
        fetch(`${url}/token`, {
          method: 'POST',
          headers: { 'x-issuer-key': key, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const metadata = (await (await fetch(`${url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
      expect(metadata).toMatchObject({
        issuer: url,
        jwks_uri: `${url}/jwks`,
        authorization_endpoint: `${url}/authorize`,
        token_endpoint: `${url}/token`,
      });
      expect((await mint({ personalnummer: 1001 }, 'wrong')).status).toBe(401);
      expect((await mint({ personalnummer: -1 })).status).toBe(400);

      const tourline = await startTestServer('pglite', {
        NODE_ENV: 'production',
        AUTH_MODE: 'oidc',
        OIDC_ISSUER: url,
        ERP_MODE: 'http',
        ERP_BASE_URL: 'http://127.0.0.1:9',
        DOCUMENT_STORE: 'local',
      });
      try {
        // Ready once it has the issuer's discovery and keys.
        await vi.waitFor(async () => expect((await tourline.get('/readyz')).status).toBe(200), { timeout: 15_000, interval: 200 });
        await tourline.seedAccount(1001);
        const driver = (await (await mint({ personalnummer: 1001 })).json()) as { accessToken: string };
        expect((await tourline.get('/me/cars', { token: driver.accessToken })).status).toBe(200);
        const office = (await (await mint({ backOffice: 'Frau Weber' })).json()) as { accessToken: string };
        expect((await tourline.get('/admin/reviews', { token: office.accessToken })).status).toBe(200);
        // A back-office token names no driver.
        expect((await tourline.get('/me/cars', { token: office.accessToken })).status).toBe(401);
      } finally {
        await tourline.close();
      }
    } finally {
      child.kill('SIGTERM');
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
