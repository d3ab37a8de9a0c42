import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import pino from 'pino';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { AUDIENCE, newIssuerKey, RealIssuer } from '../helpers/oidcIssuer.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

type Line = { level: number; msg: string; err?: { stack?: string }; check?: string; target?: string; res?: { statusCode: number } };

/** A service whose log lines the test reads. */
async function loggedServer(kind: (typeof databaseKinds)[number], env: Record<string, string>) {
  const written: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void written.push(line) });
  const server = await startTestServer(kind, { LOG_LEVEL: 'info', ...env }, { logger });
  return { server, lines: () => written.map((l) => JSON.parse(l) as Line) };
}

const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const directory = mkdtempSync(path.join(os.tmpdir(), 'tourline-s3-ready-'));
const s3rver = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [] });
let endpoint = '';
beforeAll(async () => {
  const { port } = (await s3rver.run()) as AddressInfo;
  endpoint = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  await s3rver.close();
  rmSync(directory, { recursive: true, force: true });
});

describe.each(databaseKinds)('readiness at start on %s', { timeout: 60_000 }, (kind) => {
  const servers: TestServer[] = [];
  afterAll(() => Promise.all(servers.map((s) => s.close())));

  it('is not ready while the bucket does not exist, names it in /readyz and the log, and is ready once it accepts a write', async () => {
    const bucket = `missing-${kind}-${Date.now()}`;
    const { server, lines } = await loggedServer(kind, {
      DOCUMENT_STORE: 's3',
      S3_BUCKET: bucket,
      S3_REGION: 'eu-central-1',
      S3_ENDPOINT: endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    });
    servers.push(server);
    const ready = await server.get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.errors).toEqual([{ path: 'documents', message: expect.stringContaining(`s3 bucket ${bucket}`) }]);
    expect(ready.body.errors[0].message).toMatch(/NoSuchBucket/);
    const warned = lines().filter((l) => l.check === 'documents');
    expect(warned[0]).toMatchObject({ level: 40, target: expect.stringContaining(bucket) });
    expect(warned[0].msg).toContain(bucket);
    expect(lines().filter((l) => l.level >= 50)).toEqual([]);

    const s3 = new S3Client({ region: 'eu-central-1', endpoint, forcePathStyle: true, credentials });
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    s3.destroy();
    await vi.waitFor(async () => expect((await server.get('/readyz')).status).toBe(200), { timeout: 10_000, interval: 200 });
    expect(
      lines()
        .filter((l) => l.check === 'documents')
        .at(-1),
    ).toMatchObject({ level: 30, msg: expect.stringContaining('answered') });
  });

  it('is not ready while the issuer cannot be reached, names its URL, and a token meanwhile is a 503 logged at warn without a stack', async () => {
    const driver = 4301 + databaseKinds.indexOf(kind);
    const issuer = new RealIssuer([driver]);
    const key = await newIssuerKey('RS256');
    issuer.publish([key], key);
    await issuer.start();
    const token = await issuer.token(driver);
    await issuer.kill();
    try {
      const { server, lines } = await loggedServer(kind, {
        AUTH_MODE: 'oidc',
        OIDC_ISSUER: issuer.url,
        OIDC_AUDIENCE: AUDIENCE,
        OIDC_TIMEOUT_MS: '500',
        OIDC_JWKS_COOLDOWN_MS: '200',
      });
      // The start asked once and failed; the retries go on from here.
      const started = Date.now();
      servers.push(server);
      await server.seedAccount(driver);
      const ready = await server.get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.errors).toEqual([{ path: 'issuer', message: expect.stringContaining(issuer.url) }]);
      expect(lines().find((l) => l.check === 'issuer')).toMatchObject({ level: 40, target: issuer.url });

      const refused = await server.get('/me/cars', { token });
      expect(refused.status).toBe(503);
      const line = lines().find((l) => l.res?.statusCode === 503 && l.msg.startsWith('request'));
      expect(line).toMatchObject({ level: 40 });
      expect(line?.err?.stack).toBeUndefined();
      expect(lines().filter((l) => l.level >= 50)).toEqual([]);

      // Away for a few seconds: readiness follows within 2 s of its answer, not after a long backoff.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + 3500 - Date.now())));
      await issuer.start();
      const answered = Date.now();
      await vi.waitFor(async () => expect((await server.get('/readyz')).status).toBe(200), { timeout: 15_000, interval: 50 });
      expect(Date.now() - answered).toBeLessThan(2500);
      // One warning for the outage, not one per attempt.
      expect(lines().filter((l) => l.check === 'issuer' && l.level === 40)).toHaveLength(1);
      expect((await server.get('/me/cars', { token })).status).toBe(200);
    } finally {
      await issuer.kill();
    }
  });
});
