import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import type { DevIdentityProvider } from '../auth/devIdentityProvider.js';
import { createDevSignIn } from '../auth/devSignIn.js';

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const AuthorizeQuery = z.object({
  response_type: z.literal('code'),
  client_id: z.string().min(1).max(200),
  redirect_uri: z.url().max(2000),
  code_challenge: z.string().regex(/^[A-Za-z0-9_-]{43}$/),
  code_challenge_method: z.literal('S256'),
  state: z.string().max(500).default(''),
  scope: z.string().max(500).optional(),
});
type Authorize = z.infer<typeof AuthorizeQuery>;
const SignInForm = z.object({ name: z.string().trim().min(1).max(100), key: z.string().min(1).max(500) });

interface PageText {
  action: string;
  keyHint: string;
}

function page(text: PageText, params: Authorize, error?: string) {
  const hidden = Object.entries(params)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${escape(String(value))}">`)
    .join('\n');
  return `<!doctype html>
<html lang="de"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Anmeldung (Entwicklung) – Tourline</title></head>
<body><main>
<h1>Anmeldung für das Büro (Entwicklung)</h1>
<p>Der Entwicklungs-Aussteller von Tourline meldet eine Person des Büros an. ${escape(text.keyHint)}</p>
${error ? `<p role="alert">${escape(error)}</p>` : ''}
<form method="post" action="${text.action}">
${hidden}
<p><label for="name">Name</label><br><input id="name" name="name" autocomplete="name" required maxlength="100"></p>
<p><label for="key">Schlüssel</label><br><input id="key" name="key" type="password" autocomplete="current-password" required></p>
<p><button type="submit">Anmelden</button></p>
</form></main></body></html>`;
}

/**
 * The development issuer's sign-in, under `base` (`/dev/oidc` in the service, the root in the
 * staging issuer): a form for a named back-office person (behind a key, as minting by key is)
 * that answers an authorization code, and the token endpoint that exchanges it for a back-office
 * token (PKCE S256). Only the console's client and the redirects `redirectAllowed` names are let
 * in; the token's answer may be read by the redirect's origin (a console on another origin).
 */
export function devSignInPages(options: {
  idp: DevIdentityProvider;
  issuer: () => string;
  clientId: string;
  keyMatches: (key: string) => boolean;
  base: string;
  /** Where the form says the key is. */
  keyHint: string;
  redirectAllowed: (redirect: URL, req: Request) => boolean;
}): Router {
  const text = { action: `${options.base}/authorize`, keyHint: options.keyHint };
  const signIn = createDevSignIn();
  const router = express.Router();
  const form = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 20 });
  const oauthError = (res: Response, error: string, description: string) =>
    res.status(400).set('Cache-Control', 'no-store').json({ error, error_description: description });

  /** The authorization request, or an answer that says what is wrong with it (never a redirect elsewhere). */
  const readRequest = (req: Request, res: Response, source: Record<string, unknown>): Authorize | undefined => {
    const parsed = AuthorizeQuery.safeParse(source);
    const allowed = parsed.success && options.redirectAllowed(new URL(parsed.data.redirect_uri), req);
    if (!parsed.success || parsed.data.client_id !== options.clientId || !allowed) {
      res
        .status(400)
        .type('text')
        .send(
          'Invalid authorization request: response_type=code, the console client, its /console/ redirect and a PKCE S256 challenge are needed.',
        );
      return undefined;
    }
    return parsed.data;
  };

  router.get(`${options.base}/authorize`, (req, res) => {
    const params = readRequest(req, res, req.query);
    if (params) res.type('html').set('Cache-Control', 'no-store').send(page(text, params));
  });
  router.post(`${options.base}/authorize`, form, (req, res) => {
    const { name: _name, key: _key, ...rest } = (req.body ?? {}) as Record<string, unknown>;
    const params = readRequest(req, res, rest);
    if (!params) return;
    const filled = SignInForm.safeParse(req.body);
    if (!filled.success)
      return void res
        .status(400)
        .type('html')
        .send(page(text, params, 'Bitte Name und Schlüssel angeben.'));
    if (!options.keyMatches(filled.data.key))
      return void res
        .status(401)
        .type('html')
        .send(page(text, params, 'Der Schlüssel stimmt nicht.'));
    const code = signIn.issue({
      name: filled.data.name,
      clientId: params.client_id,
      redirectUri: params.redirect_uri,
      challenge: params.code_challenge,
    });
    const target = new URL(params.redirect_uri);
    target.searchParams.set('code', code);
    if (params.state) target.searchParams.set('state', params.state);
    res.redirect(303, target.toString());
  });
  router.post(`${options.base}/token`, form, async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    allowReadingBy(req, res, body.redirect_uri);
    if (body.grant_type !== 'authorization_code') return void oauthError(res, 'unsupported_grant_type', 'only authorization_code');
    const fields = ['code', 'redirect_uri', 'client_id', 'code_verifier'] as const;
    if (!fields.every((f) => typeof body[f] === 'string')) return void oauthError(res, 'invalid_request', `needs ${fields.join(', ')}`);
    const redeemed = signIn.redeem({
      code: body.code as string,
      clientId: body.client_id as string,
      redirectUri: body.redirect_uri as string,
      verifier: body.code_verifier as string,
    });
    if (typeof redeemed === 'string')
      return void oauthError(res, redeemed, 'the code is unknown, used, expired, or the verifier does not match');
    const { accessToken, expiresAt } = await options.idp.mintBackOffice(options.issuer(), redeemed.name);
    res.set('Cache-Control', 'no-store').json({
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: Math.max(0, Math.round((Date.parse(expiresAt) - Date.now()) / 1000)),
    });
  });
  /** The console reads the answer from its own origin: that of a redirect it may use. */
  const allowReadingBy = (req: Request, res: Response, redirectUri: unknown) => {
    const origin = req.headers.origin;
    if (!origin || typeof redirectUri !== 'string' || !URL.canParse(redirectUri)) return;
    const redirect = new URL(redirectUri);
    if (redirect.origin === origin && options.redirectAllowed(redirect, req)) res.set('Access-Control-Allow-Origin', origin);
    res.vary('Origin');
  };
  return router;
}
