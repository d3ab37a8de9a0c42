import { createHash } from 'node:crypto';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDevIdentityProvider } from '../../server/auth/devIdentityProvider.js';
import { loadConfig } from '../../server/config.js';
import { stagingIssuerApp } from '../../server/http/stagingIssuer.js';
import { freePort } from '../helpers/embeddedPostgres.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const KEY = 'staging-key-0123456789';
const verifier = 'a-verifier-of-forty-three-characters-or-more-0123';
const challenge = createHash('sha256').update(verifier).digest('base64url');

/** The console's sign-in (authorization code with PKCE) at the staging issuer, for a production-mode Tourline. */
describe('the staging issuer signs the console in', { timeout: 60_000 }, () => {
  let issuer: string;
  let issuerServer: Server;
  let tourline: TestServer;
  let consoleUrl: string;
  beforeAll(async () => {
    const [issuerPort, tourlinePort] = [await freePort(), await freePort()];
    issuer = `http://127.0.0.1:${issuerPort}`;
    consoleUrl = `http://127.0.0.1:${tourlinePort}/console/`;
    const { auth } = loadConfig({ NODE_ENV: 'test' });
    const app = stagingIssuerApp({
      idp: await createDevIdentityProvider(auth),
      issuer,
      key: KEY,
      clientId: auth.consoleClientId,
      redirectUris: [consoleUrl],
    });
    issuerServer = await new Promise<Server>((resolve) => {
      const server = app.listen(issuerPort, '127.0.0.1', () => resolve(server));
    });
    tourline = await startTestServer('pglite', {
      NODE_ENV: 'production',
      PORT: String(tourlinePort),
      AUTH_MODE: 'oidc',
      OIDC_ISSUER: issuer,
      ERP_MODE: 'http',
      ERP_BASE_URL: 'http://127.0.0.1:9',
      DOCUMENT_STORE: 'local',
    });
    await vi.waitFor(async () => expect((await tourline.get('/readyz')).status).toBe(200), { timeout: 15_000, interval: 100 });
  });
  afterAll(async () => {
    await tourline?.close();
    await new Promise((resolve) => issuerServer?.close(resolve));
  });

  const authorize = (overrides: Record<string, string> = {}) =>
    new URLSearchParams({
      response_type: 'code',
      client_id: 'tourline-console',
      redirect_uri: consoleUrl,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'st-1',
      ...overrides,
    });
  const signIn = (params: URLSearchParams, key = KEY) =>
    fetch(`${issuer}/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...Object.fromEntries(params), name: 'Frau Weber', key }),
    });
  const exchange = (fields: Record<string, string>, origin = new URL(consoleUrl).origin) =>
    fetch(`${issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        redirect_uri: consoleUrl,
        client_id: 'tourline-console',
        code_verifier: verifier,
        ...fields,
      }),
    });
  const codeOf = async () => {
    const answer = await signIn(authorize());
    expect(answer.status).toBe(303);
    const back = new URL(answer.headers.get('location')!);
    expect(`${back.origin}${back.pathname}`).toBe(consoleUrl);
    expect(back.searchParams.get('state')).toBe('st-1');
    return back.searchParams.get('code')!;
  };

  it("is where the console of a production-mode Tourline signs in, and its token is the back office's", async () => {
    const settings = await tourline.get('/console/config.json');
    expect(settings.body).toMatchObject({
      clientId: 'tourline-console',
      authorizationEndpoint: `${issuer}/authorize`,
      tokenEndpoint: `${issuer}/token`,
    });
    expect((await tourline.get('/console/')).headers.get('content-security-policy')).toContain(`connect-src 'self' ${issuer}`);

    const form = await fetch(`${issuer}/authorize?${authorize()}`);
    expect(form.status).toBe(200);
    expect(await form.text()).toContain('name="key"');
    // The form's answer sends the browser on to the console: form-action must let it.
    expect(form.headers.get('content-security-policy')).toContain(`form-action 'self' ${new URL(consoleUrl).origin}`);

    const answer = await exchange({ code: await codeOf() });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('access-control-allow-origin')).toBe(new URL(consoleUrl).origin);
    const body = await answer.json();
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: expect.any(Number) });
    const reviews = await tourline.get('/admin/reviews', { token: body.access_token });
    expect(reviews.status).toBe(200);
  });

  it('exchanges a code once: used again it is invalid_grant', async () => {
    const code = await codeOf();
    expect((await exchange({ code })).status).toBe(200);
    const again = await exchange({ code });
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it.each([
    ['a wrong verifier', { code_verifier: 'another-verifier-of-forty-three-characters-00' }, 'invalid_grant'],
    ['a verifier that is too short', { code_verifier: 'short' }, 'invalid_request'],
    ['another client', { client_id: 'someone-else' }, 'invalid_grant'],
    ['another redirect', { redirect_uri: 'http://127.0.0.1:1/console/' }, 'invalid_grant'],
    ['another grant', { grant_type: 'client_credentials' }, 'unsupported_grant_type'],
  ])('refuses an exchange with %s as %s', async (_what, fields, error) => {
    const refused = await exchange({ code: await codeOf(), ...fields });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error });
  });

  it.each([
    ['an unknown client', { client_id: 'someone-else' }],
    ['an unknown redirect', { redirect_uri: 'https://evil.example/console/' }],
    ['a plain challenge', { code_challenge_method: 'plain' }],
    ['the implicit flow', { response_type: 'token' }],
  ])('refuses an authorization request with %s: 400, no redirect', async (_what, overrides) => {
    const shown = await fetch(`${issuer}/authorize?${authorize(overrides)}`, { redirect: 'manual' });
    expect(shown.status).toBe(400);
    const posted = await signIn(authorize(overrides));
    expect(posted.status).toBe(400);
    expect(posted.headers.get('location')).toBeNull();
  });

  it('hands out no code for a wrong key, and lets no other origin read a token answer', async () => {
    const wrongKey = await signIn(authorize(), 'wrong-key-0123456789');
    expect(wrongKey.status).toBe(401);
    expect(wrongKey.headers.get('location')).toBeNull();
    const foreign = await exchange({ code: await codeOf() }, 'https://evil.example');
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('answers bodies it cannot read with an OAuth error, not a 500', async () => {
    const broken = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-issuer-key': KEY },
      body: '{"personalnummer":',
    });
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ error: 'invalid_request' });
    const unknown = await fetch(`${issuer}/elsewhere`);
    expect(unknown.status).toBe(404);
  });
});
