import type { RequestHandler } from 'express';
import vary from 'vary';

const allowedMethods = 'GET, POST, PUT, PATCH, DELETE';
// The headers the SDK and a web app send; the browser asks before it sends any of them cross-origin.
const allowedHeaders = 'Authorization, Content-Type, X-Request-Id, If-None-Match, Tourline-Client';
// What a web app must read from an answer: the version, the request's id, when to try again, the next page.
const exposedHeaders = 'ETag, X-Request-Id, Retry-After, Link';
// Browsers cap the cache of a preflight themselves (Chromium at 2 hours); 10 minutes keeps a changed list quick to take effect.
const preflightMaxAgeSeconds = 600;

/**
 * Cross-origin access for the web apps whose exact origins are listed (`CORS_ORIGINS`).
 * Bearer tokens travel in a header, never in cookies, so no answer allows credentials.
 * An origin not listed gets no CORS header at all: its browser then keeps the answer from it.
 */
export function cors(origins: readonly string[]): RequestHandler {
  const allowed = new Set(origins);
  return (req, res, next) => {
    if (allowed.size === 0) return next();
    // The answer differs by Origin: a shared cache must not give one origin's answer to another.
    vary(res, 'Origin');
    const origin = req.headers.origin;
    if (!origin || !allowed.has(origin)) return next();
    res.setHeader('Access-Control-Allow-Origin', origin);
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
      res.setHeader('Access-Control-Allow-Methods', allowedMethods);
      res.setHeader('Access-Control-Allow-Headers', allowedHeaders);
      res.setHeader('Access-Control-Max-Age', String(preflightMaxAgeSeconds));
      res.statusCode = 204;
      res.end();
      return;
    }
    res.setHeader('Access-Control-Expose-Headers', exposedHeaders);
    next();
  };
}
