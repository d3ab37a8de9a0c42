// A standalone OpenID issuer for staging: npm run issuer. The development issuer's keys and claims
// (server/auth/devIdentityProvider.ts) on a port of its own, so that a production-mode Tourline
// (AUTH_MODE=oidc, OIDC_ISSUER=<its URL>) can be tried end to end without the company's IdP.
// ISSUER_PORT (default 4000), ISSUER_URL (default http://localhost:<port>), ISSUER_KEY (the key
// POST /token and the sign-in form ask for; printed when generated), ISSUER_CONSOLE_URLS (the
// console addresses a sign-in may return to, comma-separated; default
// http://localhost:3000/console/), DATA_DIR keeps its signing key across restarts.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { createDevIdentityProvider } from '../auth/devIdentityProvider.js';
import { ConfigError, loadConfig } from '../config.js';
import { stagingIssuerApp } from '../http/stagingIssuer.js';

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
const redirectUris = (process.env.ISSUER_CONSOLE_URLS ?? 'http://localhost:3000/console/').split(',').map((uri) => uri.trim());
const invalid = redirectUris.find((uri) => !URL.canParse(uri));
if (invalid) {
  console.error(`ISSUER_CONSOLE_URLS: ${invalid} is no URL`);
  process.exit(2);
}
const dataDir = path.join(config.dataDir, 'issuer');
mkdirSync(dataDir, { recursive: true });
const idp = await createDevIdentityProvider(config.auth, dataDir);

const app = stagingIssuerApp({ idp, issuer, key, clientId: config.auth.consoleClientId, redirectUris });
const server = app.listen(port, () => {
  console.log(`Issuer ${issuer} (audience ${config.auth.audience}); tokens: POST ${issuer}/token with X-Issuer-Key`);
  console.log(`Console sign-in (client ${config.auth.consoleClientId}) back to ${redirectUris.join(', ')}`);
  if (!process.env.ISSUER_KEY) console.log(`ISSUER_KEY=${key}`);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => server.close(() => process.exit(0)));
