import { timingSafeEqual } from 'node:crypto';
import express, { type ErrorRequestHandler, type Express } from 'express';
import helmet from 'helmet';
import { z } from 'zod';
import type { DevIdentityProvider } from '../auth/devIdentityProvider.js';
import { devSignInPages } from './devSignInPages.js';
import { signInPolicy } from './securityHeaders.js';

const TokenRequest = z.union([
  z.object({ personalnummer: z.number().int().positive(), roles: z.array(z.string().min(1)).optional() }).strict(),
  z.object({ backOffice: z.string().trim().min(1).max(200) }).strict(),
]);

export interface StagingIssuerOptions {
  idp: DevIdentityProvider;
  /** Its own address, as Tourline's OIDC_ISSUER names it. */
  issuer: string;
  /** The key that POST /token (JSON) and the sign-in form ask for. */
  key: string;
  /** The console's client id (OIDC_CONSOLE_CLIENT_ID). */
  clientId: string;
  /** The console addresses a sign-in may return to (`http://host:port/console/`). */
  redirectUris: string[];
}

/**
 * The staging issuer (npm run issuer): the development issuer's discovery, keys and tokens on a
 * port of its own. Tokens by key (POST /token with JSON and X-Issuer-Key), and the console's
 * sign-in (authorization code with PKCE: /authorize, and /token with a form), back to the
 * configured console addresses only.
 */
export function stagingIssuerApp(options: StagingIssuerOptions): Express {
  const { idp, issuer } = options;
  const keyMatches = (given: unknown) =>
    typeof given === 'string' && given.length === options.key.length && timingSafeEqual(Buffer.from(given), Buffer.from(options.key));
  const redirects = new Set(options.redirectUris.map((uri) => new URL(uri).href));
  // A browser holds a form's redirect to form-action too: the sign-in returns to the consoles.
  const formTargets = ["'self'", ...new Set(options.redirectUris.map((uri) => new URL(uri).origin))];

  const app = express();
  app.disable('x-powered-by');
  app.use(helmet({ contentSecurityPolicy: { useDefaults: false, directives: { ...signInPolicy, 'form-action': formTargets } } }));
  app.use((_req, res, next) => {
    res.set('Cache-Control', 'no-store');
    next();
  });
  app.get('/.well-known/openid-configuration', (_req, res) => res.json(idp.metadata(issuer)));
  app.get('/jwks', (_req, res) => res.json(idp.jwks));
  // Minting by key takes JSON; the console's code exchange (a form) goes on to the sign-in pages.
  app.post('/token', express.json({ limit: '16kb' }), async (req, res, next) => {
    if (!req.is('json')) return next();
    if (!keyMatches(req.headers['x-issuer-key']))
      return void res.status(401).json({ error: 'invalid_client', error_description: 'X-Issuer-Key is missing or wrong' });
    const parsed = TokenRequest.safeParse(req.body);
    if (!parsed.success)
      return void res
        .status(400)
        .json({ error: 'invalid_request', error_description: 'expected {personalnummer, roles?} or {backOffice}' });
    const request = parsed.data;
    res.json(
      await ('backOffice' in request
        ? idp.mintBackOffice(issuer, request.backOffice)
        : idp.mint(issuer, request.personalnummer, request.roles)),
    );
  });
  app.use(
    devSignInPages({
      idp,
      issuer: () => issuer,
      clientId: options.clientId,
      keyMatches,
      base: '',
      keyHint: 'Der Schlüssel ist ISSUER_KEY des Ausstellers (beim Start ausgegeben).',
      redirectAllowed: (redirect) => redirects.has(redirect.href),
    }),
  );
  app.use((_req, res) => res.status(404).json({ error: 'not_found' }));
  const bodyErrors: ErrorRequestHandler = (error: { status?: number; type?: string }, _req, res, _next) => {
    const status = error.status && error.status >= 400 && error.status < 500 ? error.status : 500;
    res.status(status).json({ error: status === 500 ? 'server_error' : 'invalid_request', error_description: error.type ?? 'failed' });
  };
  app.use(bodyErrors);
  return app;
}
