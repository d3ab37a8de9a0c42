import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { DEVELOPMENT_CORS_ORIGINS } from '../../server/config/access.js';
import { databaseKinds } from '../helpers/databases.js';
import { useTestServer } from '../helpers/server.js';
import { tryUpgrade } from '../helpers/wsClient.js';

const APP = 'https://driver.example.com';

const upgrade = (url: string, token: string, origin: string | undefined) => tryUpgrade(url, token, { origin });

describe.each(databaseKinds)('the Origin of a WebSocket upgrade on %s', (kind) => {
  const api = useTestServer(kind, { CORS_ORIGINS: APP });
  let pnr = 4300 + Math.floor(Math.random() * 600);

  it('lets in an upgrade without Origin (native apps, Node), from a CORS origin and from the own origin of the service', async () => {
    const token = await api.token(pnr++);
    const own = `http://${new URL(api.url).host}`;
    for (const origin of [undefined, APP, own]) expect(await upgrade(api.url, token, origin)).toEqual({ status: 101 });
  });

  it.each([
    ['a foreign page', 'https://evil.example.com'],
    ['a listed host with another scheme', 'http://driver.example.com'],
    ['a listed host with another port', 'https://driver.example.com:8443'],
    ['a listed origin with a path', `${APP}/`],
    ['the opaque origin null', 'null'],
    ['garbage', 'not an origin'],
    ['an empty Origin', ''],
    ['the service host on another scheme', 'ftp://127.0.0.1'],
  ])('refuses %s with 403 problem+json before the upgrade', async (_what, origin) => {
    const token = await api.token(pnr++);
    const answer = await upgrade(api.url, token, origin);
    expect(answer).toMatchObject({ status: 403, type: 'application/problem+json', body: { status: 403, code: 'forbidden' } });
    expect(api.ctx.config.corsOrigins).toEqual([APP]);
  });

  it('refuses a foreign page even without a token, before asking for one', async () => {
    const answer = await upgrade(api.url, 'not.a.token', 'https://evil.example.com');
    expect(answer).toMatchObject({ status: 403, body: { code: 'forbidden' } });
  });
});

describe('the development default of CORS_ORIGINS', () => {
  it('lets the example driver web app in during development only, and only while CORS_ORIGINS is unset', () => {
    const key = { ADMIN_API_KEY: 'test-admin-key-0123456789abcdef' };
    expect(loadConfig({ ...key, NODE_ENV: 'development' }).corsOrigins).toEqual(DEVELOPMENT_CORS_ORIGINS);
    expect(DEVELOPMENT_CORS_ORIGINS).toContain('http://localhost:5173');
    expect(loadConfig({ ...key, NODE_ENV: 'development', CORS_ORIGINS: APP }).corsOrigins).toEqual([APP]);
    expect(loadConfig({ ...key, NODE_ENV: 'test' }).corsOrigins).toEqual([]);
    expect(
      loadConfig({
        ...key,
        NODE_ENV: 'production',
        OIDC_ISSUER: 'https://id.example.com',
        ERP_MODE: 'http',
        ERP_BASE_URL: 'https://erp.example.com',
        DOCUMENT_STORE: 's3',
        S3_BUCKET: 'documents',
      }).corsOrigins,
    ).toEqual([]);
  });
});
