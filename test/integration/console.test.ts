import { createHash, randomUUID } from 'node:crypto';

import { describe, expect, it } from 'vitest';
import { berlinDate } from '../../shared/rules/calendar.js';

import { databaseKinds } from '../helpers/databases.js';
import { completeAt, newTour } from '../helpers/factories.js';
import { TEST_ADMIN_KEY, useTestServer } from '../helpers/server.js';
import { driverOf } from './admin.helpers.js';

const admin = { admin: true } as const;

describe.each(databaseKinds)('the console and its admin reads on %s', (kind) => {
  const api = useTestServer(kind);

  it("serves the console's page, script and sign-in settings under a strict Content-Security-Policy", async () => {
    const redirect = await fetch(`${api.url}/console`, { redirect: 'manual' });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/console/');
    const page = await api.get('/console/');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<script type="module" src="/console/app.js">');
    const policy = page.headers.get('content-security-policy')!;
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toContain('unsafe');
    const script = await api.get('/console/app.js');
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toContain('javascript');
    expect(script.text).toContain('code_challenge_method');
    expect((await api.get('/console/console.css')).status).toBe(200);
    expect((await api.get('/console/config.json')).body).toEqual({
      clientId: 'tourline-console',
      scope: 'openid profile',
      authorizationEndpoint: '/dev/oidc/authorize',
      tokenEndpoint: '/dev/oidc/token',
    });
  });

  it('lists the tours of a day with deliveries by state and lines by progress', async () => {
    const tourDate = berlinDate(new Date(Date.now() + 86_400_000 * (kind === 'pglite' ? 3 : 4)));
    const token = await api.token(7701);
    const {
      tour,
      deliveries: [first, second],
    } = await newTour(api.db, {
      accountId: 7701,
      tourDate,
      deliveries: 2,
      positions: [
        { scannable: true, quantity: 2 },
        { scannable: true, quantity: 1, scannedQuantity: 0, state: 'InProgress' },
      ],
    });
    await driverOf(api, token).scan(first.items[1].id, 'scan');
    await driverOf(api, token).scan(second.items[0].id, 'remove');
    await completeAt(api.db, first.delivery.id, new Date());

    const response = await api.get(`/admin/tours?date=${tourDate}`, { token: await api.backOfficeToken('Frau Weber') });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      date: tourDate,
      tours: [
        {
          id: tour.id,
          tour_date: tourDate,
          name: tour.name,
          driver: { personalnummer: 7701, name: 'Fahrer 7701' },
          deliveries: { total: 2, active: 1, held: 0, canceled: 0, completed: 1 },
          lines: { total: 4, loaded: 2, removed: 1, held: 0 },
        },
      ],
    });
    expect((await api.get('/admin/tours?date=1999-01-01', admin)).body).toEqual({ date: '1999-01-01', tours: [] });
  });

  it.each(['2026-02-30', '07-12-2026', 'heute', ''])('answers 400 for the tour date %j', async (date) => {
    const response = await api.get(`/admin/tours?date=${date}`, admin);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'validation' });
  });

  it("answers any delivery's attachment preview to the back office, 404 for an unknown one and 400 for a bad id", async () => {
    const token = await api.backOfficeToken('Frau Weber');
    expect((await api.get(`/admin/attachments/${randomUUID()}`, { token })).status).toBe(404);
    expect((await api.get('/admin/attachments/x', { token })).status).toBe(400);
    expect((await api.get(`/admin/attachments/${randomUUID()}?w=-1`, admin)).status).toBe(400);
    expect((await api.get(`/admin/attachments/${randomUUID()}`, { token: await api.token(7703) })).status).toBe(403);
  });
});

describe('the development issuer signs the office in with the authorization code flow and PKCE', () => {
  const api = useTestServer('pglite');
  const verifier = 'a-verifier-of-forty-three-characters-or-more-0123';
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const authorize = (overrides: Record<string, string> = {}) =>
    new URLSearchParams({
      response_type: 'code',
      client_id: 'tourline-console',
      redirect_uri: `${api.url}/console/`,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'st-1',
      ...overrides,
    });
  const signIn = (params: URLSearchParams, name = 'Frau Weber', key = TEST_ADMIN_KEY) =>
    fetch(`${api.url}/dev/oidc/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...Object.fromEntries(params), name, key }),
    });
  /** A token request; a field given as undefined is left out. */
  const exchange = (fields: Record<string, string | undefined>) => {
    const sent = {
      grant_type: 'authorization_code',
      redirect_uri: `${api.url}/console/`,
      client_id: 'tourline-console',
      code_verifier: verifier,
      ...fields,
    };
    return fetch(`${api.url}/dev/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(Object.entries(sent).filter((entry): entry is [string, string] => entry[1] !== undefined)),
    });
  };
  const codeOf = async () => {
    const answer = await signIn(authorize());
    expect(answer.status).toBe(303);
    const location = new URL(answer.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(`${api.url}/console/`);
    expect(location.searchParams.get('state')).toBe('st-1');
    return location.searchParams.get('code')!;
  };

  it('names its endpoints in the metadata', async () => {
    expect((await api.get('/dev/oidc/.well-known/openid-configuration')).body).toMatchObject({
      authorization_endpoint: `${api.url}/dev/oidc/authorize`,
      token_endpoint: `${api.url}/dev/oidc/token`,
      code_challenge_methods_supported: ['S256'],
    });
  });

  it('shows a sign-in form, answers a code, and exchanges it once for a back-office token', async () => {
    const form = await fetch(`${api.url}/dev/oidc/authorize?${authorize()}`);
    expect(form.status).toBe(200);
    expect(await form.text()).toContain('name="key"');
    expect(form.headers.get('content-security-policy')).toContain("form-action 'self'");

    const code = await codeOf();
    const answer = await exchange({ code });
    expect(answer.status).toBe(200);
    const body = await answer.json();
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: expect.any(Number) });
    expect((await api.get('/admin/reviews', { token: body.access_token })).status).toBe(200);

    const again = await exchange({ code });
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it.each([
    ['another client', { client_id: 'someone-else' }],
    ['a foreign redirect', { redirect_uri: 'https://evil.example/console/' }],
    ['another path', { redirect_uri: 'http://127.0.0.1/elsewhere' }],
    ['a plain challenge', { code_challenge_method: 'plain' }],
    ['a short challenge', { code_challenge: 'abc' }],
    ['the implicit flow', { response_type: 'token' }],
  ])('refuses an authorization request with %s (400, no redirect)', async (_what, overrides) => {
    const shown = await fetch(`${api.url}/dev/oidc/authorize?${authorize(overrides)}`, { redirect: 'manual' });
    expect(shown.status).toBe(400);
    const posted = await signIn(authorize(overrides));
    expect(posted.status).toBe(400);
    expect(posted.headers.get('location')).toBeNull();
  });

  it('refuses a wrong admin key or an empty name on the form without a code', async () => {
    const wrongKey = await signIn(authorize(), 'Frau Weber', 'wrong-key-0123456789');
    expect(wrongKey.status).toBe(401);
    expect(wrongKey.headers.get('location')).toBeNull();
    const noName = await signIn(authorize(), '  ');
    expect(noName.status).toBe(400);
  });

  it.each([
    ['a wrong verifier', { code_verifier: 'another-verifier-of-forty-three-characters-00' }],
    ['a verifier that is too short', { code_verifier: 'short' }],
    ['another redirect', { redirect_uri: 'http://127.0.0.1:1/console/' }],
    ['another client', { client_id: 'someone-else' }],
  ])('refuses the exchange with %s, and the code is spent', async (_what, fields) => {
    const code = await codeOf();
    const refused = await exchange({ code, ...fields });
    expect(refused.status).toBe(400);
    expect((await refused.json()).error).toMatch(/^invalid_(grant|request)$/);
    // A malformed verifier is refused before the code is looked at; anything else spends it.
    if ((fields as { code_verifier?: string }).code_verifier !== 'short') expect((await exchange({ code })).status).toBe(400);
  });

  it.each([
    ['another grant', { grant_type: 'client_credentials' }, 'unsupported_grant_type'],
    ['no verifier', { code_verifier: undefined }, 'invalid_request'],
    ['a made-up code', { code: 'made-up' }, 'invalid_grant'],
  ])('answers an exchange with %s with %s', async (_what, fields, error) => {
    const answer = await exchange({ code: 'c', ...fields });
    expect(answer.status).toBe(400);
    expect((await answer.json()).error).toBe(error);
  });
});
