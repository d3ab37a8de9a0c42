// A standalone OpenID issuer for staging: npm run issuer. The development issuer's keys and claims
// (server/auth/devIdentityProvider.ts) on a port of its own, so that a production-mode Tourline
// (AUTH_MODE=oidc, OIDC_ISSUER=<its URL>) can be tried end to end without the company's IdP.
// ISSUER_PORT (default 4000), ISSUER_URL (default http://localhost:<port>), ISSUER_KEY (the key
// POST /token asks for; printed when generated), DATA_DIR keeps its signing key across restarts.
// Tokens: POST /token {"personalnummer": 1001} for a driver, {"backOffice": "Frau Weber"} for the
// back office, with the header X-Issuer-Key.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { z } from 'zod';
import { createDevIdentityProvider } from '../auth/devIdentityProvider.js';
import { ConfigError, loadConfig } from '../config.js';

const TokenRequest = z.union([
  z.object({ personalnummer: z.number().int().positive(), roles: z.array(z.string().min(1)).optional() }).strict(),
  z.object({ backOffice: z.string().trim().min(1).max(200) }).strict(),
]);

let config;
try {
  config = loadConfig({ ...process.env, NODE_ENV: 'development', AUTH_MODE: 'dev' });
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(error.message);
  process.exit(2);
}
const port = Number(process.env.ISSUER_PORT ?? 4000);
const issuer = (process.env.ISSUER_URL ?? `http://localhost:${port}`).replace(/\/$/, '');
const key = process.env.ISSUER_KEY ?? randomBytes(24).toString('base64url');
const dataDir = path.join(config.dataDir, 'issuer');
mkdirSync(dataDir, { recursive: true });
const idp = await createDevIdentityProvider(config.auth, dataDir);

const send = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
};
const keyMatches = (given: string | string[] | undefined) =>
  typeof given === 'string' && given.length === key.length && timingSafeEqual(Buffer.from(given), Buffer.from(key));

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', issuer);
  if (req.method === 'GET' && url.pathname === '/.well-known/openid-configuration')
    return send(res, 200, idp.metadata(issuer, { signIn: false }));
  if (req.method === 'GET' && url.pathname === '/jwks') return send(res, 200, idp.jwks);
  if (req.method !== 'POST' || url.pathname !== '/token') return send(res, 404, { error: 'not_found' });
  if (!keyMatches(req.headers['x-issuer-key']))
    return send(res, 401, { error: 'invalid_client', error_description: 'X-Issuer-Key is missing or wrong' });
  let raw = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => (raw += chunk));
  req.on('end', () => {
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return send(res, 400, { error: 'invalid_request', error_description: 'the body is not JSON' });
    }
    const parsed = TokenRequest.safeParse(body);
    if (!parsed.success)
      return send(res, 400, { error: 'invalid_request', error_description: 'expected {personalnummer, roles?} or {backOffice}' });
    const request = parsed.data;
    const minted =
      'backOffice' in request ? idp.mintBackOffice(issuer, request.backOffice) : idp.mint(issuer, request.personalnummer, request.roles);
    void minted.then((token) => send(res, 200, token));
  });
});
server.listen(port, () => {
  console.log(`Issuer ${issuer} (audience ${config.auth.audience}); tokens: POST ${issuer}/token with X-Issuer-Key`);
  if (!process.env.ISSUER_KEY) console.log(`ISSUER_KEY=${key}`);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => server.close(() => process.exit(0)));
