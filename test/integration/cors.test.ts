import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../server/config.js';
import { databaseKinds } from '../helpers/databases.js';
import { useTestServer } from '../helpers/server.js';

const APP = 'https://driver.example.com';
const LOCAL = 'http://localhost:5173';
const corsHeaders = [
  'access-control-allow-origin',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-expose-headers',
  'access-control-max-age',
  'access-control-allow-credentials',
];

function corsOf(headers: Headers) {
  return corsHeaders.filter((name) => headers.has(name));
}

function preflight(
  origin: string,
  method = 'POST',
  requested = 'authorization, content-type, x-request-id, if-none-match, tourline-client',
) {
  return { origin: origin, 'access-control-request-method': method, 'access-control-request-headers': requested };
}

describe.each(databaseKinds)('CORS on %s', (kind) => {
  const api = useTestServer(kind, { CORS_ORIGINS: ` ${APP} , ${LOCAL}` });

  it('answers the preflight of a listed origin with 204 and what it may send', async () => {
    for (const origin of [APP, LOCAL]) {
      const response = await api.request('OPTIONS', '/sync/push', { headers: preflight(origin) });
      expect(response.status).toBe(204);
      expect(response.text).toBe('');
      expect(response.headers.get('access-control-allow-origin')).toBe(origin);
      expect(response.headers.get('access-control-allow-methods')).toBe('GET, POST, PUT, PATCH, DELETE');
      const allowed = response.headers.get('access-control-allow-headers')!.toLowerCase().split(', ');
      expect(allowed).toEqual(
        expect.arrayContaining(['authorization', 'content-type', 'x-request-id', 'if-none-match', 'tourline-client']),
      );
      expect(Number(response.headers.get('access-control-max-age'))).toBeGreaterThan(0);
      expect(response.headers.get('vary')).toMatch(/origin/i);
      expect(response.headers.has('access-control-allow-credentials')).toBe(false);
    }
  });

  it('lets a listed origin read the answer and its ETag, X-Request-Id, Retry-After and Link', async () => {
    const token = await api.token(4101);
    const response = await api.get('/me/cars', { token, headers: { origin: APP } });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe(APP);
    expect(response.headers.get('access-control-expose-headers')).toBe('ETag, X-Request-Id, Retry-After, Link');
    expect(response.headers.get('vary')).toMatch(/origin/i);
  });

  it('adds the headers to problem answers too, so a web app can read the refusal', async () => {
    const response = await api.get('/me/cars', { headers: { origin: APP } });
    expect(response.status).toBe(401);
    expect(response.headers.get('access-control-allow-origin')).toBe(APP);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  it.each([
    ['an origin not listed', 'https://evil.example.com'],
    ['a listed host with another scheme', 'http://driver.example.com'],
    ['a listed host with another port', 'https://driver.example.com:8443'],
    ['a sub-domain of a listed host', 'https://x.driver.example.com'],
    ['a listed origin with a path', `${APP}/`],
    ['the opaque origin null', 'null'],
    ['no origin at all, only garbage', 'not an origin'],
  ])('gives %s no CORS header, preflight or not', async (_what, origin) => {
    const pre = await api.request('OPTIONS', '/sync/push', { headers: preflight(origin) });
    expect(corsOf(pre.headers)).toEqual([]);
    expect(pre.headers.get('vary')).toMatch(/origin/i);
    const token = await api.token(4102);
    const answer = await api.get('/me/cars', { token, headers: { origin } });
    expect(answer.status).toBe(200);
    expect(corsOf(answer.headers)).toEqual([]);
  });

  it('treats an OPTIONS without Access-Control-Request-Method as no preflight', async () => {
    const response = await api.request('OPTIONS', '/sync/push', { headers: { origin: APP } });
    expect(response.status).not.toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe(APP);
    expect(response.headers.has('access-control-allow-methods')).toBe(false);
  });

  it('answers requests without Origin (native apps, servers) as before', async () => {
    const response = await api.get('/health');
    expect(corsOf(response.headers)).toEqual([]);
  });
});

describe.each(databaseKinds)('CORS off by default on %s', (kind) => {
  const api = useTestServer(kind);

  it('gives no origin CORS headers and no Vary when CORS_ORIGINS is unset', async () => {
    const pre = await api.request('OPTIONS', '/sync/push', { headers: preflight(APP) });
    expect(corsOf(pre.headers)).toEqual([]);
    const response = await api.get('/health', { headers: { origin: APP } });
    expect(corsOf(response.headers)).toEqual([]);
    expect(response.headers.get('vary') ?? '').not.toMatch(/origin/i);
  });
});

describe('CORS_ORIGINS validation', () => {
  const base = { NODE_ENV: 'test', ADMIN_API_KEY: 'test-admin-key-0123456789abcdef' };

  it('reads a comma-separated list and drops blanks', () => {
    expect(loadConfig({ ...base, CORS_ORIGINS: `${APP}, ,${LOCAL},` }).corsOrigins).toEqual([APP, LOCAL]);
    expect(loadConfig(base).corsOrigins).toEqual([]);
  });

  it.each([
    '*',
    'https://*.example.com',
    'driver.example.com',
    'https://driver.example.com/',
    'https://driver.example.com/app',
    'ftp://driver.example.com',
    'https://Driver.example.com',
    'https://driver.example.com:443',
    `${APP},*`,
    'null',
  ])('refuses to start with %s', (value) => {
    expect(() => loadConfig({ ...base, CORS_ORIGINS: value })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, CORS_ORIGINS: value })).toThrow(/CORS_ORIGINS: must list exact origins/);
  });
});
