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

/**
 * Headers that keep a browser from misreading an answer, on every answer: `nosniff`, no referrer,
 * no framing, a Content-Security-Policy that lets the API's answers run nothing and the docs page
 * only its own assets, and HSTS when `hstsMaxAgeSeconds` is set (only behind TLS). Cross-origin
 * headers that would break the driver web app's calls from its own origin are left to CORS.
 */
export function securityHeaders(options: { hstsMaxAgeSeconds: number }): RequestHandler {
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
  return (req, res, next) => {
    const handler = req.path === '/docs' || req.path.startsWith('/docs/') ? docs : api;
    handler(req as IncomingMessage, res as ServerResponse, next);
  };
}
