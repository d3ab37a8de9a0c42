import { createHmac, randomUUID } from 'node:crypto';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import { http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { IssuerUnreachable } from '../../server/auth/issuerKeys.js';
import { createTokenVerifier, TokenError } from '../../server/auth/tokens.js';
import { DomainError } from '../../server/errors.js';
import { apiRoutes } from '../../server/http/routes/index.js';
import { databaseKinds } from '../helpers/databases.js';
import { startTestServer, TEST_ADMIN_KEY, useTestServer, type ApiResponse, type TestServer } from '../helpers/server.js';
import { inProcess } from '../helpers/target.js';
import { SyncSocket } from '../helpers/wsClient.js';

const ISSUER = 'https://idp.example.test';
const AUDIENCE = 'tourline';
// Every test here may bring a new key: no limit on fetching the key set (see 'the token verifier').
const oidcEnv = { AUTH_MODE: 'oidc', OIDC_ISSUER: ISSUER, OIDC_AUDIENCE: AUDIENCE, OIDC_JWKS_COOLDOWN_MS: '0' };

interface SigningKey {
  kid: string;
  alg: 'RS256' | 'ES256' | 'RS512' | 'ES384' | 'PS256';
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  jwk: JWK;
}

async function newKey(alg: SigningKey['alg']): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = `${alg.toLowerCase()}-${randomUUID().slice(0, 8)}`;
  return { kid, alg, privateKey, publicKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** A third-party OIDC issuer: discovery document and key set, with hit counters. */
const idp = {
  keys: [] as SigningKey[],
  hits: { discovery: 0, jwks: 0 },
  discoveryDown: false,
  /** The key set's address fails at the network level, as when the issuer is unreachable. */
  jwksDown: false,
};

const mockServer = setupServer(
  http.get(`${ISSUER}/.well-known/openid-configuration`, () => {
    idp.hits.discovery += 1;
    if (idp.discoveryDown) return new HttpResponse(null, { status: 503 });
    return HttpResponse.json({
      issuer: ISSUER,
      jwks_uri: `${ISSUER}/protocol/jwks`,
      id_token_signing_alg_values_supported: ['RS256', 'ES256'],
    });
  }),
  http.get(`${ISSUER}/protocol/jwks`, () => {
    idp.hits.jwks += 1;
    if (idp.jwksDown) return HttpResponse.error();
    return HttpResponse.json({ keys: idp.keys.map((k) => k.jwk) });
  }),
);

let rsaKey: SigningKey;
let ecKey: SigningKey;

beforeAll(async () => {
  rsaKey = await newKey('RS256');
  ecKey = await newKey('ES256');
  idp.keys = [rsaKey, ecKey];
  mockServer.listen({ onUnhandledRequest: 'bypass' });
});
afterEach(() => {
  idp.discoveryDown = false;
  idp.jwksDown = false;
});
afterAll(() => {
  mockServer.close();
});

const now = () => Math.floor(Date.now() / 1000);

interface TokenOptions {
  key?: SigningKey;
  claims?: JWTPayload;
  issuer?: string;
  audience?: string;
  expiresAt?: number | null;
  notBefore?: number;
  issuedAt?: number;
  kid?: string;
}

async function idpToken(personalnummer: number | undefined, options: TokenOptions = {}) {
  const key = options.key ?? rsaKey;
  const jwt = new SignJWT({ ...(personalnummer === undefined ? {} : { personalnummer }), ...options.claims })
    .setProtectedHeader({ alg: key.alg, kid: options.kid ?? key.kid, typ: 'JWT' })
    .setIssuer(options.issuer ?? ISSUER)
    .setAudience(options.audience ?? AUDIENCE)
    .setSubject(String(personalnummer ?? 'nobody'))
    .setIssuedAt(options.issuedAt);
  if (options.expiresAt !== null) jwt.setExpirationTime(options.expiresAt ?? now() + 600);
  if (options.notBefore !== undefined) jwt.setNotBefore(options.notBefore);
  return jwt.sign(key.privateKey);
}

const b64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');
const claimsFor = (personalnummer: number) => ({ personalnummer, iss: ISSUER, aud: AUDIENCE, iat: now(), exp: now() + 600 });

function unsignedToken(personalnummer: number) {
  return `${b64url(JSON.stringify({ alg: 'none', typ: 'JWT', kid: rsaKey.kid }))}.${b64url(JSON.stringify(claimsFor(personalnummer)))}.`;
}

/** HS256 signed with a secret, or with the issuer's public key as HMAC secret (key confusion). */
function hmacToken(personalnummer: number, secret: string) {
  const signingInput = `${b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid: rsaKey.kid }))}.${b64url(JSON.stringify(claimsFor(personalnummer)))}`;
  return `${signingInput}.${createHmac('sha256', secret).update(signingInput).digest('base64url')}`;
}

function expectUnauthorized(response: ApiResponse) {
  expect(response.status).toBe(401);
  expect(response.headers.get('content-type')).toContain('application/problem+json');
  expect(response.body).toMatchObject({ status: 401, code: 'unauthorized', title: 'Authentifizierung fehlgeschlagen' });
  expect(typeof response.body.type).toBe('string');
  expect(typeof response.body.detail).toBe('string');
}

inProcess.describe.each(databaseKinds)('the log line of a refused token on %s', (kind) => {
  const written: string[] = [];
  let api: TestServer;
  const driver = 3051;
  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (line: string) => void written.push(line) });
    api = await startTestServer(kind, { ...oidcEnv, LOG_LEVEL: 'info' }, { logger });
    await api.seedAccount(driver);
  });
  afterAll(async () => {
    await api?.close();
  });

  it.each<[string, string, () => Promise<string>, () => Record<string, string | undefined>]>([
    ['a token for another audience', 'audience', () => idpToken(driver, { audience: 'another-app' }), () => ({ aud: 'another-app' })],
    ['an expired token', 'expired', () => idpToken(driver, { expiresAt: now() - 60 }), () => ({ aud: AUDIENCE })],
    [
      'a token of another issuer',
      'issuer',
      () => idpToken(driver, { issuer: 'https://evil.example.test' }),
      () => ({ iss: 'https://evil.example.test' }),
    ],
    ['nbf in the future', 'not_yet_valid', () => idpToken(driver, { notBefore: now() + 3600 }), () => ({ aud: AUDIENCE })],
    [
      'a kid the issuer does not publish',
      'unknown_key',
      () => idpToken(driver, { kid: 'withdrawn-key' }),
      () => ({ kid: 'withdrawn-key' }),
    ],
    [
      'a signature of another key under a published kid',
      'signature',
      async () => idpToken(driver, { key: await newKey('RS256'), kid: rsaKey.kid }),
      () => ({ kid: rsaKey.kid }),
    ],
    ['alg none', 'algorithm', async () => unsignedToken(driver), () => ({ kid: rsaKey.kid })],
    ['no JWT at all', 'malformed', async () => 'not-a-jwt', () => ({ kid: undefined, iss: undefined, aud: undefined })],
  ])('writes one warning for %s with reason %s, its kid, iss and aud, and never the token', async (_name, reason, makeToken, named) => {
    const token = await makeToken();
    const from = written.length;
    expectUnauthorized(await api.get('/me/cars', { token }));
    const lines = written.slice(from);
    const refused = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'token refused');
    expect(refused).toHaveLength(1);
    const expected = { kid: rsaKey.kid, iss: ISSUER, aud: AUDIENCE, ...named() };
    for (const [key, value] of Object.entries(expected)) {
      if (value === undefined) expect(refused[0]).not.toHaveProperty(key);
      else expect(refused[0]).toHaveProperty(key, value);
    }
    expect(refused[0]).toMatchObject({ level: 40, reason });
    const text = lines.join('');
    expect(text).not.toContain(token);
    const signature = token.split('.')[2];
    if (signature) expect(text).not.toContain(signature);
  });

  it('writes no refusal line for an accepted token', async () => {
    const from = written.length;
    expect((await api.get('/me/cars', { token: await idpToken(driver) })).status).toBe(200);
    expect(written.slice(from).filter((l) => l.includes('token refused'))).toEqual([]);
  });
});

describe.each(databaseKinds)('bearer tokens of a third-party OIDC issuer on %s', (kind) => {
  const api = useTestServer(kind, oidcEnv);
  const driver = 3001;
  beforeAll(async () => {
    await api.seedAccount(driver);
  });

  it('accepts a valid RS256 token', async () => {
    const response = await api.get(`/accounts/${driver}`, { token: await idpToken(driver) });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ personalnummer: driver, active: true });
  });

  it('accepts a valid ES256 token', async () => {
    expect((await api.get('/me/cars', { token: await idpToken(driver, { key: ecKey }) })).status).toBe(200);
  });

  it.each(['RS512', 'ES384', 'PS256'] as const)('accepts a valid %s token by default', async (alg) => {
    const key = await newKey(alg);
    idp.keys = [rsaKey, ecKey, key];
    expect((await api.get('/me/cars', { token: await idpToken(driver, { key }) })).status).toBe(200);
    idp.keys = [rsaKey, ecKey];
  });

  it('accepts the issuer written with a trailing slash, as some providers do', async () => {
    expect((await api.get('/me/cars', { token: await idpToken(driver, { issuer: `${ISSUER}/` }) })).status).toBe(200);
    expectUnauthorized(await api.get('/me/cars', { token: await idpToken(driver, { issuer: `${ISSUER}/x` }) }));
  });

  it('accepts a Personalnummer claim given as a numeric string', async () => {
    expect((await api.get('/me/cars', { token: await idpToken(undefined, { claims: { personalnummer: String(driver) } }) })).status).toBe(
      200,
    );
  });

  it('picks up a rotated key by its new kid and refuses tokens of the retired key', async () => {
    const oldKey = await newKey('RS256');
    idp.keys = [oldKey, ecKey];
    expect((await api.get('/me/cars', { token: await idpToken(driver, { key: oldKey }) })).status).toBe(200);

    const rotated = await newKey('RS256');
    idp.keys = [rotated, ecKey];
    const jwksBefore = idp.hits.jwks;
    expect((await api.get('/me/cars', { token: await idpToken(driver, { key: rotated }) })).status).toBe(200);
    expect(idp.hits.jwks).toBeGreaterThan(jwksBefore);
    expectUnauthorized(await api.get('/me/cars', { token: await idpToken(driver, { key: oldKey }) }));
    idp.keys = [rsaKey, ecKey];
  });

  it.each<[string, () => Promise<string>]>([
    ['a wrong issuer', () => idpToken(driver, { issuer: 'https://evil.example.test' })],
    ['a wrong audience', () => idpToken(driver, { audience: 'another-app' })],
    ['an expired token', () => idpToken(driver, { expiresAt: now() - 60 })],
    ['a token without expiry', () => idpToken(driver, { expiresAt: null })],
    ['nbf in the future', () => idpToken(driver, { notBefore: now() + 3600 })],
    ['alg none', async () => unsignedToken(driver)],
    ['HS256 with a shared secret', async () => hmacToken(driver, 'a-shared-secret-that-nobody-configured')],
    ['HS256 keyed with the issuer public key', async () => hmacToken(driver, await exportSPKI(rsaKey.publicKey))],
    [
      'a signature of a key the issuer does not publish under that kid',
      async () => idpToken(driver, { key: await newKey('RS256'), kid: rsaKey.kid }),
    ],
    ['an unknown kid', async () => idpToken(driver, { key: await newKey('ES256') })],
    [
      'a tampered payload',
      async () => {
        const [header, , signature] = (await idpToken(driver)).split('.');
        return `${header}.${b64url(JSON.stringify({ ...claimsFor(driver), personalnummer: driver + 1 }))}.${signature}`;
      },
    ],
  ])('answers 401 problem+json for %s', async (_name, makeToken) => {
    expectUnauthorized(await api.get('/me/cars', { token: await makeToken() }));
  });

  it.each<[string, JWTPayload]>([
    ['missing', {}],
    ['not a number', { personalnummer: 'abc' }],
    ['zero', { personalnummer: 0 }],
    ['a fraction', { personalnummer: 30.5 }],
  ])('answers 401 when the Personalnummer claim is %s', async (_name, claims) => {
    expectUnauthorized(await api.get('/me/cars', { token: await idpToken(undefined, { claims }) }));
  });

  it('answers 401 for a valid token of an unknown account, also to a well-formed push', async () => {
    const token = await idpToken(3999);
    expectUnauthorized(await api.get('/me/cars', { token }));
    const scan = {
      eventId: randomUUID(),
      occurredAt: new Date().toISOString(),
      type: 'scan',
      deliveryItemId: randomUUID(),
      action: 'scan',
    };
    expectUnauthorized(await api.post('/sync/push', { clientId: 'phone-1', events: [scan] }, { token }));
  });

  it('answers 401 for a valid token of an inactive account', async () => {
    await api.seedAccount(3002, 'Inaktiv', false);
    expectUnauthorized(await api.get('/me/cars', { token: await idpToken(3002) }));
  });

  it('does not serve the development identity provider in OIDC mode', async () => {
    expect((await api.post('/dev/token', { personalnummer: driver })).status).toBe(404);
    expect((await api.get('/dev/oidc/.well-known/openid-configuration')).status).toBe(404);
  });
});

describe.each(databaseKinds)('OIDC discovery on %s', (kind) => {
  function expectUpstream(response: ApiResponse) {
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toContain('application/problem+json');
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(response.body).toMatchObject({ status: 503, code: 'upstream_unavailable' });
  }

  /** A server of its own, whose verifier has discovered nothing yet, with one driver's account and token. */
  async function withFreshServer(personalnummer: number, test: (api: TestServer, token: string) => Promise<void>) {
    const api = await startTestServer(kind, oidcEnv);
    try {
      await api.seedAccount(personalnummer);
      await test(api, await idpToken(personalnummer));
    } finally {
      await api.close();
    }
  }

  it('answers 503 upstream_unavailable, not 401, while the issuer cannot be asked, and 200 once it is back', async () => {
    // Down since before the start: the service holds no key set (the start's own fetch failed too).
    idp.discoveryDown = true;
    await withFreshServer(3104, async (api, token) => {
      expectUpstream(await api.get('/me/cars', { token }));
      await expect(SyncSocket.open(api.url, { token })).rejects.toMatchObject({ status: 503 });
      idp.discoveryDown = false;
      idp.jwksDown = true;
      expectUpstream(await api.get('/me/cars', { token }));
      idp.jwksDown = false;
      expect((await api.get('/me/cars', { token })).status).toBe(200);
    });
  });

  it('keeps accepting tokens of known keys while the key set cannot be fetched again', async () => {
    await withFreshServer(3105, async (api, token) => {
      expect((await api.get('/me/cars', { token })).status).toBe(200);
      idp.jwksDown = true;
      // An unknown kid makes the verifier fetch the key set again, which fails.
      expectUpstream(await api.get('/me/cars', { token: await idpToken(3105, { key: await newKey('ES256') }) }));
      expect((await api.get('/me/cars', { token })).status).toBe(200);
      // So is a new token of a key in the set fetched before: it is checked without the issuer.
      expect((await api.get('/me/cars', { token: await idpToken(3105, { key: ecKey }) })).status).toBe(200);
    });
  });

  it('fetches the discovery document and key set once, at the start, for many requests', async () => {
    const before = { ...idp.hits };
    await withFreshServer(3101, async (api, token) => {
      const concurrent = await Promise.all(Array.from({ length: 5 }, () => api.get('/me/cars', { token })));
      for (let i = 0; i < 5; i += 1)
        concurrent.push(await api.get('/me/cars', { token: await idpToken(3101, { key: i % 2 ? ecKey : rsaKey }) }));
      expect(concurrent.map((r) => r.status)).toEqual(Array(10).fill(200));
      expect(idp.hits.discovery - before.discovery).toBe(1);
      expect(idp.hits.jwks - before.jwks).toBe(1);
    });
  });
});

describe('the token verifier', () => {
  /** A verifier of the test's issuer, RS256 and ES256 unless `options` say otherwise. */
  const verifierOf = (options: Partial<Parameters<typeof createTokenVerifier>[0]> = {}) =>
    createTokenVerifier({
      issuer: () => ISSUER,
      audience: AUDIENCE,
      algorithms: ['RS256', 'ES256'],
      personalnummerClaim: 'personalnummer',
      ...options,
    });
  it('fails while the issuer is unreachable and discovers again once it is back', async () => {
    const verify = verifierOf({ algorithms: ['RS256'] });
    const token = await idpToken(3102);
    idp.discoveryDown = true;
    await expect(verify(token)).rejects.toThrow(IssuerUnreachable);
    await expect(verify(token)).rejects.toThrow(/discovery: answered 503/);
    idp.discoveryDown = false;
    await expect(verify(token)).resolves.toMatchObject({ personalnummer: 3102 });
  });

  it('keeps serving the keys of a set past its age while the key set cannot be fetched again', async () => {
    const verify = verifierOf();
    const token = await idpToken(3106, { expiresAt: now() + 3600 });
    await expect(verify(token)).resolves.toMatchObject({ personalnummer: 3106 });
    idp.jwksDown = true;
    // Past the key set's maximum age every check asks for it again first.
    vi.useFakeTimers({ now: Date.now() + 11 * 60_000, toFake: ['Date'] });
    try {
      const before = idp.hits.jwks;
      await expect(verify(await idpToken(3106, { key: ecKey, expiresAt: now() + 3600 }))).resolves.toMatchObject({ personalnummer: 3106 });
      expect(idp.hits.jwks).toBe(before + 1);
      await expect(verify(token)).resolves.toMatchObject({ personalnummer: 3106 });
      await expect(verify(await idpToken(3106, { key: await newKey('ES256') }))).rejects.toThrow(IssuerUnreachable);
    } finally {
      vi.useRealTimers();
    }
  });

  it('checks a token once while the key set stays, and refuses it once it has expired', async () => {
    const verify = verifierOf({ algorithms: ['RS256'] });
    const token = await idpToken(3103, { expiresAt: now() + 2 });
    await expect(verify(token)).resolves.toMatchObject({ personalnummer: 3103 });
    // The issuer stops publishing the key without the set being fetched again: the checked token still counts.
    idp.keys = [ecKey];
    try {
      await expect(verify(token)).resolves.toMatchObject({ personalnummer: 3103 });
      // Past its expiry and the clock tolerance (30 s by default).
      vi.useFakeTimers({ now: Date.now() + 33_000, toFake: ['Date'] });
      await expect(verify(token)).rejects.toThrow(/exp/);
    } finally {
      vi.useRealTimers();
      idp.keys = [rsaKey, ecKey];
    }
  });

  it('fetches the key set for a rotated key at once, and within a budget for tokens naming made-up keys', async () => {
    const verify = verifierOf({ jwksCooldownMs: 60_000 });
    const before = idp.hits.jwks;
    await expect(verify(await idpToken(3107))).resolves.toMatchObject({ personalnummer: 3107 });
    const rotated = await newKey('RS256');
    idp.keys = [rotated, ecKey];
    try {
      await expect(verify(await idpToken(3107, { key: rotated }))).resolves.toMatchObject({ personalnummer: 3107 });
      await expect(verify(await idpToken(3107, { key: await newKey('ES256') }))).rejects.toThrow(TokenError);
      // Budget spent: a new kid may be a rotation the service cannot see yet, so it is not refused.
      for (let i = 0; i < 10; i += 1) {
        const refusal = await verify(await idpToken(3107, { key: await newKey('ES256') })).catch((error: unknown) => error);
        expect(refusal).toBeInstanceOf(IssuerUnreachable);
        expect((refusal as IssuerUnreachable).retryAfterSeconds).toBeGreaterThan(50);
      }
      expect(idp.hits.jwks - before).toBe(3);
      await expect(verify(await idpToken(3108, { key: rotated }))).resolves.toMatchObject({ personalnummer: 3108 });
    } finally {
      idp.keys = [rsaKey, ecKey];
    }
  });

  it('refuses at once a token naming a key missing from a set fetched well after the token was issued', async () => {
    const verify = verifierOf({ jwksCooldownMs: 60_000 });
    await expect(verify(await idpToken(3109))).resolves.toMatchObject({ personalnummer: 3109 });
    const before = idp.hits.jwks;
    const withdrawn = await newKey('ES256');
    const issuedLongAgo = (key: SigningKey) => idpToken(3109, { key, issuedAt: now() - 3600 });
    for (let i = 0; i < 5; i += 1) await expect(verify(await issuedLongAgo(withdrawn))).rejects.toThrow(TokenError);
    expect(idp.hits.jwks).toBe(before);
  });

  it('refuses to be built with only symmetric algorithms', () => {
    expect(() => verifierOf({ algorithms: ['HS256'] })).toThrow(/asymmetric/);
  });
});

describe.each(databaseKinds)('development identity provider on %s', (kind) => {
  const api = useTestServer(kind);

  it('publishes its discovery document and a public key set', async () => {
    const discovery = await api.get('/dev/oidc/.well-known/openid-configuration');
    expect(discovery.status).toBe(200);
    expect(discovery.body).toMatchObject({ issuer: `${api.url}/dev/oidc`, jwks_uri: `${api.url}/dev/oidc/jwks` });
    const jwks = await api.get('/dev/oidc/jwks');
    expect(jwks.status).toBe(200);
    expect(jwks.body.keys).toHaveLength(1);
    expect(jwks.body.keys[0]).toMatchObject({ kty: 'EC', alg: 'ES256', kid: expect.any(String) });
    expect(jwks.body.keys[0]).not.toHaveProperty('d');
  });

  it.each([
    ['without', undefined],
    ['with a wrong', 'wrong-admin-key-0123456789'],
  ])('mints no token for a caller %s admin key (401)', async (_name, key) => {
    await api.seedAccount(3204);
    const response = await api.post('/dev/token', { personalnummer: 3204 }, { headers: key ? { 'x-admin-api-key': key } : {} });
    expectUnauthorized(response);
    expect(response.body).not.toHaveProperty('accessToken');
  });

  it('mints a token that the server verifies through discovery', async () => {
    await api.seedAccount(3201);
    const minted = await api.post('/dev/token', { personalnummer: 3201 }, { admin: true });
    expect(minted.status).toBe(200);
    expect(Date.parse(minted.body.expiresAt)).toBeGreaterThan(Date.now());
    expect((await api.get('/me/cars', { token: minted.body.accessToken })).status).toBe(200);
  });

  it('answers 404 for an unknown or inactive account', async () => {
    await api.seedAccount(3202, 'Inaktiv', false);
    for (const personalnummer of [3299, 3202]) {
      const response = await api.post('/dev/token', { personalnummer }, { admin: true });
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(response.body.code).toBe('not_found');
    }
  });

  it.each([[{}], [{ personalnummer: 'abc' }], [{ personalnummer: -1 }], [{ personalnummer: 1.5 }], [{ personalnummer: true }], [[]]])(
    'answers 400 for the body %j',
    async (body) => {
      const response = await api.post('/dev/token', body, { admin: true });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation');
    },
  );

  it('answers 401 for a token signed by another key under the same kid', async () => {
    await api.seedAccount(3203);
    const { kid } = (await api.get('/dev/oidc/jwks')).body.keys[0];
    const impostor = await newKey('ES256');
    const token = await new SignJWT({ personalnummer: 3203 })
      .setProtectedHeader({ alg: 'ES256', kid })
      .setIssuer(`${api.url}/dev/oidc`)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(now() + 600)
      .sign(impostor.privateKey);
    expectUnauthorized(await api.get('/me/cars', { token }));
  });

  it('answers 401 for a token that another server minted with its own key', async () => {
    const other = await startTestServer(kind);
    try {
      const foreign = await other.token(3205);
      expect((await other.get('/me/cars', { token: foreign })).status).toBe(200);
      await api.seedAccount(3205);
      expectUnauthorized(await api.get('/me/cars', { token: foreign }));
      expect((await api.get('/me/cars', { token: await api.token(3205) })).status).toBe(200);
    } finally {
      await other.close();
    }
  });

  it('answers 401 problem+json on every bearer route without a token or with a malformed one', async () => {
    const bearerRoutes = apiRoutes.filter((r) => r.auth === 'bearer');
    expect(bearerRoutes.length).toBeGreaterThan(0);
    for (const r of bearerRoutes) {
      const path = r.path.replace(/\{(\w+)\}/g, () => randomUUID());
      for (const headers of [
        {},
        { authorization: 'Bearer' } as Record<string, string>,
        { authorization: 'Basic dXNlcjpwYXNz' },
        { authorization: 'Bearer not.a.jwt' },
      ]) {
        const response = await api.request(r.method.toUpperCase(), path, { headers, body: r.body ? {} : undefined });
        expect(response.status, `${r.method.toUpperCase()} ${path} ${JSON.stringify(headers)}`).toBe(401);
        expectUnauthorized(response);
      }
    }
  });

  it('answers 401 problem+json on every bearer route to a valid token of a deactivated account, whatever it sends', async () => {
    const token = await api.token(3206);
    await api.seedAccount(3206, 'Fahrer 3206', false);
    for (const r of apiRoutes.filter((route) => route.auth === 'bearer')) {
      const path = r.path.replace(/\{(\w+)\}/g, () => randomUUID());
      const method = r.method.toUpperCase();
      // Invalid JSON, text that is not JSON, broken JSON: each would be a 400 or 415 from an active account.
      const bodies = r.body ? [[{}], ['not json'], ['{', { 'content-type': 'application/json' }]] : [[undefined]];
      for (const [body, headers] of bodies as [unknown, Record<string, string>?][]) {
        const response = await api.request(method, path, { token, body, headers });
        expect(response.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(401);
        expectUnauthorized(response);
      }
    }
  });

  it('answers 401 problem+json on every admin route without the admin key or with a wrong one, 403 to a driver token', async () => {
    const adminRoutes = apiRoutes.filter((r) => r.auth === 'admin');
    expect(adminRoutes.length).toBeGreaterThan(0);
    const token = await api.token(3204);
    for (const r of adminRoutes) {
      const path = r.path.replace(/\{(\w+)\}/g, () => randomUUID());
      const method = r.method.toUpperCase();
      for (const credentials of [{}, { admin: 'a-wrong-admin-key-0123456789' }, { admin: TEST_ADMIN_KEY.slice(0, -1) }]) {
        expectUnauthorized(await api.request(method, path, { ...credentials, body: r.body ? {} : undefined }));
      }
      const byDriver = await api.request(method, path, { token, body: r.body ? {} : undefined });
      expect(byDriver.status, `${method} ${path}`).toBe(403);
      expect(byDriver.body).toMatchObject({ code: 'forbidden' });
      expect((await api.request(method, path, { admin: true, body: r.body ? {} : undefined })).status, `${method} ${path}`).not.toBe(401);
    }
  });

  it('refuses a wrong admin key in the authenticator with unauthorized', () => {
    expect(() => api.ctx.auth.admin('wrong-key')).toThrow(DomainError);
    expect(() => api.ctx.auth.admin(undefined)).toThrow(expect.objectContaining({ code: 'unauthorized' }));
    expect(() => api.ctx.auth.admin(TEST_ADMIN_KEY)).not.toThrow();
  });
});

describe.each(databaseKinds)('the limit on refused admin and development requests on %s', (kind) => {
  const api = useTestServer(kind, { AUTH_REFUSAL_LIMIT: '3', AUTH_REFUSAL_WINDOW_SECONDS: '600', TRUST_PROXY_HOPS: '1' });
  const from = (address: string, key?: string) => ({ headers: { 'x-forwarded-for': address, ...(key ? { 'x-admin-api-key': key } : {}) } });

  it('answers 429 with Retry-After to an address past its refusals, whatever key it then brings, and counts other addresses apart', async () => {
    for (let i = 0; i < 3; i += 1) expectUnauthorized(await api.get('/admin/reviews', from('203.0.113.7', 'wrong-admin-key-0123456789')));
    for (const response of [
      await api.get('/admin/reviews', from('203.0.113.7', TEST_ADMIN_KEY)),
      await api.post('/dev/token', { personalnummer: 3301 }, from('203.0.113.7', TEST_ADMIN_KEY)),
    ]) {
      expect(response.status).toBe(429);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(response.body).toMatchObject({ code: 'rate_limited', status: 429 });
      const retryAfter = Number(response.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(590);
      expect(retryAfter).toBeLessThanOrEqual(600);
    }
    expect((await api.get('/admin/reviews', from('203.0.113.8', TEST_ADMIN_KEY))).status).toBe(200);
  });

  it('counts neither granted requests nor refusals outside /admin and /dev', async () => {
    for (let i = 0; i < 5; i += 1) expect((await api.get('/admin/reviews', from('203.0.113.9', TEST_ADMIN_KEY))).status).toBe(200);
    for (let i = 0; i < 5; i += 1) expectUnauthorized(await api.get('/me/cars', from('203.0.113.9')));
    expect((await api.get('/dev/oidc/jwks', from('203.0.113.9'))).status).toBe(200);
    expect((await api.get('/admin/reviews', from('203.0.113.9', TEST_ADMIN_KEY))).status).toBe(200);
  });
});
