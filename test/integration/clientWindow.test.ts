import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { useTestServer } from '../helpers/server.js';
import { tryUpgrade } from '../helpers/wsClient.js';

const upgrade = (url: string, token: string, query: string) => tryUpgrade(url, token, { query });

const named = (release: string, protocol = 1) => ({ 'tourline-client': `@tourline/client/${release}; protocol=${protocol}` });

describe.each(databaseKinds)('the window of client releases on %s', (kind) => {
  const api = useTestServer(kind, { CLIENT_MIN_VERSION: '0.2.0' });
  let pnr = 6100 + Math.floor(Math.random() * 800);

  it('serves a release inside the window, and names of other products by their protocol', async () => {
    const token = await api.token(++pnr);
    for (const headers of [named('0.2.0'), named('1.4.2'), named('0.2.0-rc.1'), { 'tourline-client': 'fleet-app/7.0.1; protocol=1' }])
      expect((await api.get('/me/cars', { token, headers })).status).toBe(200);
  });

  it.each([
    ['an older release', named('0.1.9'), 'update to 0.2.0'],
    ['a protocol no longer spoken', named('0.2.0', 0), 'Protocol 0'],
    ['no name (0.1.0 did not name itself)', {}, 'does not name its release'],
  ])('answers %s with 426 client_too_old and the oldest release served', async (_what, headers, detail) => {
    const token = await api.token(++pnr);
    for (const [method, path] of [
      ['GET', '/me/cars'],
      ['POST', '/sync/push'],
      ['GET', '/sync/changes'],
    ]) {
      const response = await api.request(method, path, {
        token,
        headers,
        body: method === 'POST' ? { clientId: 'x', events: [] } : undefined,
      });
      expect(response.status).toBe(426);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(response.body).toMatchObject({ status: 426, code: 'client_too_old', minimumVersion: '0.2.0' });
      expect(response.body.detail).toContain(detail);
    }
  });

  it('tells a too-old app so before it looks at the token', async () => {
    const response = await api.get('/me/cars', { token: 'not-a-token', headers: named('0.1.0') });
    expect(response).toMatchObject({ status: 426, body: { code: 'client_too_old' } });
  });

  it.each(['0.2.0', '@tourline/client/0.2', '@tourline/client/0.2.0', '@tourline/client/0.2.0; protocol=one', '/0.2.0; protocol=1'])(
    'refuses the malformed name %j with 400 naming the header',
    async (value) => {
      const token = await api.token(++pnr);
      const response = await api.get('/me/cars', { token, headers: { 'tourline-client': value } });
      expect(response).toMatchObject({ status: 400, body: { code: 'validation', errors: [{ path: 'headers.tourline-client' }] } });
    },
  );

  it('leaves the admin endpoints and /health alone', async () => {
    expect((await api.get('/admin/reviews', { admin: true })).status).toBe(200);
    expect((await api.get('/health')).status).toBe(200);
  });

  it('refuses a socket of a too-old release with 426 and lets in one named inside the window', async () => {
    const token = await api.token(++pnr);
    expect(await upgrade(api.url, token, '')).toMatchObject({ status: 426, body: { code: 'client_too_old', minimumVersion: '0.2.0' } });
    const old = `?client=${encodeURIComponent('@tourline/client/0.1.5; protocol=1')}`;
    expect(await upgrade(api.url, token, old)).toMatchObject({ status: 426, body: { code: 'client_too_old' } });
    expect(await upgrade(api.url, token, `?client=${encodeURIComponent('@tourline/client/0.2.0; protocol=1')}`)).toEqual({ status: 101 });
  });
});

describe.each(databaseKinds)('the default window on %s', (kind) => {
  const api = useTestServer(kind);

  it('serves apps that name no release, as 0.1.0 did', async () => {
    const token = await api.token(6050);
    expect((await api.get('/me/cars', { token })).status).toBe(200);
    expect((await api.get('/me/cars', { token, headers: named('0.0.9') })).status).toBe(426);
  });
});
