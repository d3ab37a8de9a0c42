import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Router } from 'express';
import type { AppContext } from '../context.js';
import { unavailable } from '../errors.js';

// From server/http in the sources and dist/server/http in the build alike: console/ beside server/.
const consoleDir = fileURLToPath(new URL('../../console', import.meta.url));

/** The script: bundled by `npm run build` into the build's console/app.js; from the sources, bundled once on first request. */
async function consoleScript(): Promise<string> {
  const built = path.join(consoleDir, 'app.js');
  if (existsSync(built)) return readFile(built, 'utf8');
  const { bundleConsole } = await import('./consoleFromSources.js');
  return bundleConsole(consoleDir);
}

interface SignInEndpoints {
  authorizationEndpoint: string;
  tokenEndpoint: string;
}

/** Where the console signs in: the development issuer on this origin, else the issuer's metadata (asked once, again after a failure). */
function signInEndpoints(ctx: AppContext): () => Promise<SignInEndpoints> {
  if (ctx.config.auth.mode === 'dev') {
    const dev = { authorizationEndpoint: '/dev/oidc/authorize', tokenEndpoint: '/dev/oidc/token' };
    return async () => dev;
  }
  let known: Promise<SignInEndpoints> | undefined;
  const discover = async () => {
    const issuer = ctx.config.auth.issuer!.replace(/\/$/, '');
    const response = await fetch(`${issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(ctx.config.auth.timeoutMs) });
    const metadata = (await response.json()) as Record<string, unknown>;
    if (typeof metadata.authorization_endpoint !== 'string' || typeof metadata.token_endpoint !== 'string') {
      throw new Error('the issuer names no authorization_endpoint or token_endpoint');
    }
    return { authorizationEndpoint: metadata.authorization_endpoint, tokenEndpoint: metadata.token_endpoint };
  };
  return () =>
    (known ??= discover().catch((error: Error) => {
      known = undefined;
      throw unavailable(`The identity provider cannot be asked: ${error.message}`, 5);
    }));
}

/** The back-office console at /console/: its page, script, styles and sign-in settings (no secret: a public client with PKCE). */
export function consolePages(ctx: AppContext): Router {
  const router = express.Router({ caseSensitive: true, strict: true });
  let script: Promise<string> | undefined;
  const endpoints = signInEndpoints(ctx);
  const noCache = { 'Cache-Control': 'no-cache' };
  router.get('/console', (_req, res) => res.redirect(301, '/console/'));
  router.get('/console/', (_req, res) => res.set(noCache).sendFile(path.join(consoleDir, 'index.html')));
  router.get('/console/console.css', (_req, res) => res.set(noCache).sendFile(path.join(consoleDir, 'console.css')));
  router.get('/console/app.js', async (_req, res) => {
    script ??= consoleScript().catch((error: unknown) => {
      script = undefined;
      throw error;
    });
    res
      .set(noCache)
      .type('js')
      .send(await script);
  });
  router.get('/console/config.json', async (_req, res) => {
    res.set(noCache).json({ clientId: ctx.config.auth.consoleClientId, scope: 'openid profile', ...(await endpoints()) });
  });
  return router;
}
