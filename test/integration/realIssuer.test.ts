import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { databaseKinds, type DatabaseKind } from '../helpers/databases.js';
import { AUDIENCE, newIssuerKey, RealIssuer, type IssuerKey } from '../helpers/oidcIssuer.js';
import { startTestServer, type ApiResponse, type TestServer } from '../helpers/server.js';
import { SyncSocket } from '../helpers/wsClient.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

const driver = 4001;
let rsa: IssuerKey;
let ec: IssuerKey[];

beforeAll(async () => {
  rsa = await newIssuerKey('RS256');
  ec = await Promise.all(Array.from({ length: 6 }, () => newIssuerKey('ES256')));
});

function expectUnauthorized(response: ApiResponse) {
  expect(response.status).toBe(401);
  expect(response.body).toMatchObject({ code: 'unauthorized', title: 'Authentifizierung fehlgeschlagen' });
}

/** 503 `upstream_unavailable` with a Retry-After in whole seconds; answers the seconds. */
function expectUnavailable(response: ApiResponse) {
  expect(response.status).toBe(503);
  expect(response.headers.get('content-type')).toContain('application/problem+json');
  expect(response.body).toMatchObject({ status: 503, code: 'upstream_unavailable' });
  const retryAfter = Number(response.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter) && retryAfter >= 1).toBe(true);
  return retryAfter;
}

/** Tokens refused by their shape alone, whatever the issuer's state and keys. */
function garbage(real: string) {
  const [header, payload, signature] = real.split('.');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  return [
    'abc.def.ghi',
    'not-a-jwt',
    `${header}..`,
    `${b64url({ alg: 'none', typ: 'at+jwt' })}.${payload}.`,
    `${header}.${b64url({ ...claims, iss: 'https://evil.example.test' })}.${signature}`,
  ];
}

/** The issuer's token with another Personalnummer: the signature no longer fits the known key. */
function tampered(real: string) {
  const [header, payload, signature] = real.split('.');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  return `${header}.${b64url({ ...claims, personalnummer: driver + 1 })}.${signature}`;
}

describe.each(databaseKinds)('tokens of a real OpenID provider on %s', (kind: DatabaseKind) => {
  const issuer = new RealIssuer([driver]);
  const servers: TestServer[] = [];
  /** A Tourline service trusting the issuer; closed after the block. */
  const tourline = async (env: Record<string, string> = { OIDC_JWKS_COOLDOWN_MS: '1000' }) => {
    const server = await startTestServer(kind, { AUTH_MODE: 'oidc', OIDC_ISSUER: issuer.url, OIDC_AUDIENCE: AUDIENCE, ...env });
    servers.push(server);
    await server.seedAccount(driver);
    return server;
  };
  // Past 3 fetches in a row, one per second; the issuer may take 0.5 s to answer.
  let api: TestServer;
  // Fetches the key set again after 1 s, and allows 1 s of clock difference.
  let strict: TestServer;

  beforeAll(async () => {
    issuer.publish([rsa, ec[0]], rsa);
    await issuer.start();
    api = await tourline({ OIDC_JWKS_COOLDOWN_MS: '1000', OIDC_TIMEOUT_MS: '500' });
    strict = await tourline({ OIDC_JWKS_MAX_AGE_SECONDS: '1', OIDC_CLOCK_TOLERANCE_SECONDS: '1' });
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await issuer.kill();
  });

  it('accepts RS256 and ES256 access tokens from the token endpoint, over REST and the WebSocket', async () => {
    issuer.publish([rsa, ec[0]], rsa);
    const rs256 = await issuer.token(driver);
    expect((await api.get(`/accounts/${driver}`, { token: rs256 })).body).toMatchObject({ personalnummer: driver });
    const socket = await SyncSocket.open(api.url, { token: rs256 });
    socket.ws.close();
    issuer.publish([rsa, ec[0]], ec[0]);
    expect((await api.get('/me/cars', { token: await issuer.token(driver) })).status).toBe(200);
  });

  it('soft rotation: a key published beside the old one works at once, and tokens of the old key keep working', async () => {
    issuer.publish([rsa, ec[0]], ec[0]);
    const old = await issuer.token(driver);
    expect((await api.get('/me/cars', { token: old })).status).toBe(200);
    issuer.publish([ec[1], ec[0], rsa], ec[1]);
    expect((await api.get('/me/cars', { token: await issuer.token(driver) })).status).toBe(200);
    expect((await api.get('/me/cars', { token: old })).status).toBe(200);
  });

  it('hard rotation: the new key works at once, and the withdrawn one stops working with the set fetched for it', async () => {
    issuer.publish([ec[1], rsa], ec[1]);
    const old = await issuer.token(driver);
    expect((await api.get('/me/cars', { token: old })).status).toBe(200);
    issuer.publish([ec[2], rsa], ec[2]);
    // The set in memory is young and was not fetched again: nothing has told the service yet.
    expect((await api.get('/me/cars', { token: old })).status).toBe(200);
    const jwksBefore = issuer.hits.jwks;
    expect((await api.get('/me/cars', { token: await issuer.token(driver) })).status).toBe(200);
    expect(issuer.hits.jwks).toBe(jwksBefore + 1);
    expectUnauthorized(await api.get('/me/cars', { token: old }));
  });

  it('a key withdrawn without a rotation stops working once the set is fetched again after its maximum age', async () => {
    issuer.publish([ec[2], rsa], rsa);
    const token = await issuer.token(driver);
    expect((await strict.get('/me/cars', { token })).status).toBe(200);
    issuer.publish([ec[2]], ec[2]);
    await sleep(1100);
    expectUnauthorized(await strict.get('/me/cars', { token }));
    expect((await strict.get('/me/cars', { token: await issuer.token(driver) })).status).toBe(200);
  });

  it('refuses a token once it has expired, past the clock tolerance', async () => {
    issuer.publish([ec[2]], ec[2]);
    issuer.ttlSeconds = 2;
    try {
      const token = await issuer.token(driver);
      expect((await strict.get('/me/cars', { token })).status).toBe(200);
      await sleep(3100);
      const refused = await strict.get('/me/cars', { token });
      expectUnauthorized(refused);
    } finally {
      issuer.ttlSeconds = 600;
    }
  });

  it('accepts at once the tokens of an issuer whose clock runs 3 s ahead and sets nbf, within the clock tolerance', async () => {
    issuer.publish([ec[2]], ec[2]);
    issuer.clockAheadSeconds = 3;
    try {
      const token = await issuer.token(driver);
      expect((await api.get('/me/cars', { token })).status).toBe(200);
      // With a tolerance of 1 s the same token is not valid yet.
      expectUnauthorized(await strict.get('/me/cars', { token }));
    } finally {
      issuer.clockAheadSeconds = 0;
    }
  });

  it('issuer killed: a key it has not seen is 503 with Retry-After on every try, never 401; known keys and garbage are judged without it', async () => {
    issuer.publish([ec[2]], ec[2]);
    const known = await issuer.token(driver);
    expect((await api.get('/me/cars', { token: known })).status).toBe(200);
    const knownKeyNewToken = await issuer.token(driver);
    issuer.publish([ec[2], ec[3]], ec[3]);
    const unseenKey = await issuer.token(driver);
    await issuer.kill();
    let retryAfter = 0;
    try {
      for (let attempt = 0; attempt < 6; attempt += 1) {
        retryAfter = expectUnavailable(await api.get('/me/cars', { token: unseenKey }));
        await sleep(200);
      }
      await expect(SyncSocket.open(api.url, { token: unseenKey })).rejects.toMatchObject({
        status: 503,
        retryAfter: expect.stringMatching(/^\d+$/),
      });
      expect((await api.get('/me/cars', { token: knownKeyNewToken })).status).toBe(200);
      for (const token of [...garbage(known), tampered(known)]) expectUnauthorized(await api.get('/me/cars', { token }));
    } finally {
      await issuer.start();
    }
    await sleep(retryAfter * 1000);
    expect((await api.get('/me/cars', { token: unseenKey })).status).toBe(200);
  });

  it('issuer frozen: 503 with Retry-After within the timeout, and 200 once it answers again', async () => {
    issuer.publish([ec[3], ec[4]], ec[4]);
    const unseenKey = await issuer.token(driver);
    issuer.freeze();
    let retryAfter: number;
    try {
      const started = Date.now();
      retryAfter = expectUnavailable(await api.get('/me/cars', { token: unseenKey }));
      expect(Date.now() - started).toBeLessThan(3000);
      expectUnauthorized(await api.get('/me/cars', { token: 'abc.def.ghi' }));
    } finally {
      issuer.thaw();
    }
    await sleep(retryAfter * 1000);
    expect((await api.get('/me/cars', { token: unseenKey })).status).toBe(200);
  });

  it('a service started while the issuer is down starts, answers 503 with Retry-After on every try and 401 for garbage, and 200 once the issuer is back', async () => {
    issuer.publish([ec[5]], ec[5]);
    const token = await issuer.token(driver);
    await issuer.kill();
    let retryAfter = 0;
    const fresh = await tourline();
    try {
      expect((await fresh.get('/health')).status).toBe(200);
      for (let attempt = 0; attempt < 6; attempt += 1) {
        retryAfter = expectUnavailable(await fresh.get('/me/cars', { token }));
        await sleep(200);
      }
      await expect(SyncSocket.open(fresh.url, { token })).rejects.toMatchObject({ status: 503 });
      for (const garbled of garbage(token)) expectUnauthorized(await fresh.get('/me/cars', { token: garbled }));
    } finally {
      await issuer.start();
    }
    await sleep(retryAfter * 1000);
    expect((await fresh.get('/me/cars', { token })).status).toBe(200);
    // Not ready until its own check of the issuer, retried in the background, has an answer.
    await vi.waitFor(async () => expect((await fresh.get('/readyz')).status).toBe(200), { timeout: 35_000, interval: 250 });
  }, 60_000);

  it('refuses garbage and a wrong signature under a known key with 401 while the issuer is up', async () => {
    issuer.publish([ec[5]], ec[5]);
    const token = await issuer.token(driver);
    expect((await api.get('/me/cars', { token })).status).toBe(200);
    const jwksBefore = issuer.hits.jwks;
    for (const garbled of [...garbage(token), tampered(token)]) expectUnauthorized(await api.get('/me/cars', { token: garbled }));
    expect(issuer.hits.jwks).toBe(jwksBefore);
  });
});
