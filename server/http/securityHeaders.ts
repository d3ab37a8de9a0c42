import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet from 'helmet';
import type { RequestHandler } from 'express';

/** The API's answers (JSON, attachments, PDFs) render nothing a browser should run or frame. */
const apiPolicy = { 'default-src': ["'none'"], 'frame-ancestors': ["'none'"], 'base-uri': ["'none'"], 'form-action': ["'none'"] };
/** The API reference (Swagger UI, served from /docs/assets): its script, its inline styles, calls to /openapi.json. */
const docsPolicy = {
  ...apiPolicy,
  'script-src': ["'self'"],
  'style-src': ["'self'", "'unsafe-inline'"],
  'img-src': ["'self'", 'data:'],
  'connect-src': ["'self'"],
};

/** The console: its own script and styles only, images it made from fetched bytes, calls to the API and the issuer. */
const consolePolicy = (issuer: string | undefined) => ({
  ...apiPolicy,
  'script-src': ["'self'"],
  'style-src': ["'self'"],
  'img-src': ["'self'", 'blob:'],
  'connect-src': ["'self'", ...(issuer ? [new URL(issuer).origin] : [])],
});
/** The development issuer's sign-in form: no script, no style, posts only to itself. */
export const signInPolicy = { ...apiPolicy, 'form-action': ["'self'"] };

/**
 * Headers that keep a browser from misreading an answer, on every answer: `nosniff`, no referrer,
 * no framing, a Content-Security-Policy that lets the API's answers run nothing and the docs page
 * only its own assets, and HSTS when `hstsMaxAgeSeconds` is set (only behind TLS). Cross-origin
 * headers that would break the driver web app's calls from its own origin are left to CORS.
 */
export function securityHeaders(options: { hstsMaxAgeSeconds: number; issuer?: string }): RequestHandler {
  const common = {
    crossOriginEmbedderPolicy: false,
    crossOriginOpenerPolicy: false,
    crossOriginResourcePolicy: false,
    originAgentCluster: false,
    referrerPolicy: { policy: 'no-referrer' as const },
    strictTransportSecurity: options.hstsMaxAgeSeconds > 0 ? { maxAge: options.hstsMaxAgeSeconds } : false,
    xFrameOptions: { action: 'deny' as const },
  };
  const api = helmet({ ...common, contentSecurityPolicy: { useDefaults: false, directives: apiPolicy } });
  const docs = helmet({ ...common, contentSecurityPolicy: { useDefaults: false, directives: docsPolicy } });
  const consolePage = helmet({ ...common, contentSecurityPolicy: { useDefaults: false, directives: consolePolicy(options.issuer) } });
  const signIn = helmet({ ...common, contentSecurityPolicy: { useDefaults: false, directives: signInPolicy } });
  const policyOf = (path: string) => {
    if (path === '/docs' || path.startsWith('/docs/')) return docs;
    if (path === '/console' || path.startsWith('/console/')) return consolePage;
    return path === '/dev/oidc/authorize' ? signIn : api;
  };
  return (req, res, next) => {
    const handler = policyOf(req.path);
    handler(req as IncomingMessage, res as ServerResponse, next);
  };
}
