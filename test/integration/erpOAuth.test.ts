import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import Provider from 'oidc-provider';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../server/server.js';
import { databaseKinds } from '../helpers/databases.js';
import { newIssuerKey } from '../helpers/oidcIssuer.js';
import { startRecordingErp, type ErpCall } from '../helpers/recordingErp.js';
import { testConfig, TestServer } from '../helpers/server.js';
import { tourPayload } from '../helpers/tourPayloads.js';

const CLIENT_ID = 'tourline-erp';
const CLIENT_SECRET = 'erp-client-secret-0123456789abcdef';
const AUDIENCE = 'urn:erp';

/**
 * A real OAuth 2 authorization server (`oidc-provider`) that hands out JWT access tokens for the
 * ERP by client credentials, authenticated by HTTP Basic, and counts the tokens it issued.
 */
async function startTokenEndpoint() {
  const key = await newIssuerKey('ES256');
  const state = { ttlSeconds: 3600, issued: 0 };
  let handler: http.RequestListener = () => undefined;
  const server = http.createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/token') state.issued += 1;
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_basic',
        id_token_signed_response_alg: key.alg,
      },
    ],
    jwks: { keys: [key.jwk] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => AUDIENCE,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: 'erp',
          audience: AUDIENCE,
          accessTokenFormat: 'jwt',
          accessTokenTTL: state.ttlSeconds,
          jwt: { sign: { alg: key.alg, kid: key.kid } },
        }),
      },
    },
  });
  handler = provider.callback();
  const keys = createRemoteJWKSet(new URL(`${issuer}/jwks`));
  return {
    tokenUrl: `${issuer}/token`,
    state,
    /** Whether a call carries a bearer token this server issued for the ERP. */
    async valid(call: ErpCall) {
      const token = /^Bearer (.+)$/.exec(call.headers.authorization ?? '')?.[1];
      if (!token) return false;
      return jwtVerify(token, keys, { issuer, audience: AUDIENCE }).then(
        () => true,
        () => false,
      );
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const bearer = (call: ErpCall) => call.headers.authorization;

describe.each(databaseKinds)('OAuth 2 against a real token endpoint on %s', (kind) => {
  let idp: Awaited<ReturnType<typeof startTokenEndpoint>>;
  let erp: Awaited<ReturnType<typeof startRecordingErp>>;
  const logged: string[] = [];
  let api: TestServer;
  const driver = kind === 'pglite' ? 73_001 : 73_002;
  beforeAll(async () => {
    idp = await startTokenEndpoint();
    // The ERP lets in only tokens of the token endpoint, as a resource server does.
    erp = await startRecordingErp({ tours: (date) => [tourPayload(driver, { date, deliveries: 1 })] });
    erp.state.authorize = (call) => idp.valid(call);
    const logger = pino(
      { level: 'debug' },
      new Writable({
        write(chunk, _encoding, done) {
          logged.push(String(chunk));
          done();
        },
      }),
    );
    const config = await testConfig(kind, {
      ERP_MODE: 'http',
      ERP_BASE_URL: erp.url,
      ERP_RETRIES: '0',
      ERP_OAUTH_TOKEN_URL: idp.tokenUrl,
      ERP_OAUTH_CLIENT_ID: CLIENT_ID,
      ERP_OAUTH_CLIENT_SECRET: CLIENT_SECRET,
      ERP_OAUTH_SCOPE: 'erp',
    });
    api = new TestServer(await startServer(config, { ephemeral: true, logger }));
  });
  afterAll(async () => {
    await api?.close();
    await erp.close();
    await idp.close();
  });
  const importDay = (date: string) => api.post(`/admin/import-erp?date=${date}`, undefined, { admin: true });

  it('sends a token of the token endpoint on every call and asks for it once while it is valid', async () => {
    // The ERP's own check: an import with a token the issuer did not sign would be refused.
    erp.state.tours = (date) => [tourPayload(driver, { date, deliveries: 1 })];
    const from = erp.calls.length;
    const issued = idp.state.issued;
    expect((await importDay('2026-06-01')).body).toMatchObject({ success: true, tours: 1 });
    expect((await importDay('2026-06-02')).body).toMatchObject({ success: true, tours: 1 });
    const calls = erp.calls.slice(from);
    expect(calls).toHaveLength(2);
    for (const call of calls) expect(await idp.valid(call)).toBe(true);
    expect(new Set(calls.map(bearer)).size).toBe(1);
    expect(idp.state.issued - issued).toBe(1);
  });

  it('asks for a new token when the cached one runs out', async () => {
    // Renewed 30 s before it expires: a token of 31 s is used for 1 s. The ERP revokes the cached
    // token, so that the next one is such a short one.
    idp.state.ttlSeconds = 31;
    const revoked = bearer(erp.calls.at(-1)!);
    erp.state.authorize = async (call) => bearer(call) !== revoked && (await idp.valid(call));
    try {
      expect((await importDay('2026-06-03')).status).toBe(200);
      const short = bearer(erp.calls.at(-1)!);
      await new Promise((resolve) => setTimeout(resolve, 1200));
      const [from, issued] = [erp.calls.length, idp.state.issued];
      expect((await importDay('2026-06-04')).status).toBe(200);
      // One call, with a new token asked for before it: no refused round trip.
      const calls = erp.calls.slice(from);
      expect(calls).toHaveLength(1);
      expect(idp.state.issued - issued).toBe(1);
      expect(bearer(calls[0])).not.toBe(short);
      expect(await idp.valid(calls[0])).toBe(true);
    } finally {
      idp.state.ttlSeconds = 3600;
      erp.state.authorize = (call) => idp.valid(call);
    }
  });

  it('asks for a new token once when the ERP refuses the one it has with 401, and sends the call again', async () => {
    await new Promise((resolve) => setTimeout(resolve, 1200)); // the short token of the test before runs out
    expect((await importDay('2026-06-05')).status).toBe(200);
    const refused = bearer(erp.calls.at(-1)!);
    // The ERP revoked that token: it refuses it from now on.
    erp.state.authorize = async (call) => bearer(call) !== refused && (await idp.valid(call));
    const from = erp.calls.length;
    const issued = idp.state.issued;
    expect((await importDay('2026-06-06')).body).toMatchObject({ success: true });
    const calls = erp.calls.slice(from);
    expect(calls).toHaveLength(2);
    expect(bearer(calls[0])).toBe(refused);
    expect(bearer(calls[1])).not.toBe(refused);
    expect(await idp.valid(calls[1])).toBe(true);
    expect(idp.state.issued - issued).toBe(1);
  });

  it('never writes the client secret or a token into the log', async () => {
    const tokens = new Set(erp.calls.map((c) => bearer(c)?.slice('Bearer '.length)).filter(Boolean));
    const text = logged.join('');
    expect(text).toContain('ERP import of');
    expect(text).not.toContain(CLIENT_SECRET);
    for (const token of tokens) expect(text).not.toContain(token);
  });
});
