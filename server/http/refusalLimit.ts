import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { DomainError } from '../errors.js';

/** Clients tracked at most; past this the oldest windows are forgotten first. */
const maxClients = 10_000;

/**
 * Guessing admin keys (which also mint development tokens) is slowed down: a client address
 * whose requests under `/admin/` and `/dev/` were refused (401) `limit` times within a window
 * gets 429 with `Retry-After` for every such request until the window ends, whatever it sends,
 * so the answer says nothing about a key tried meanwhile. The path is compared in every spelling
 * (letter case, doubled slashes, percent-encoded letters): routing answers only the canonical one,
 * but the count must not depend on that.
 */
export function refusalLimit(options: { limit: number; windowMs: number; now?: () => number }): RequestHandler {
  const now = options.now ?? Date.now;
  const windows = new Map<string, { refusals: number; endsAt: number }>();

  const current = (client: string) => {
    const window = windows.get(client);
    if (window && window.endsAt > now()) return window;
    if (window) windows.delete(client);
    return undefined;
  };
  const recordRefusal = (client: string) => {
    const window = current(client);
    if (window) return void window.refusals++;
    if (windows.size >= maxClients) windows.delete(windows.keys().next().value!);
    windows.set(client, { refusals: 1, endsAt: now() + options.windowMs });
  };

  return (req, res, next) => {
    if (!isGuarded(req.path)) return next();
    const client = req.ip ?? 'unknown';
    const window = current(client);
    if (window && window.refusals >= options.limit) {
      const seconds = Math.max(1, Math.ceil((window.endsAt - now()) / 1000));
      return next(
        new DomainError('rate_limited', 'Too many refused requests from this address; try again later', undefined, undefined, seconds),
      );
    }
    res.once('finish', () => {
      if (res.statusCode === 401) recordRefusal(client);
    });
    next();
  };
}

const guarded = /^\/(admin|dev)(\/|$)/i;

function isGuarded(path: string) {
  if (guarded.test(path)) return true;
  if (!path.includes('%') && !path.includes('//')) return false;
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // Not valid percent-encoding: compared as sent.
  }
  return guarded.test(decoded.replace(/\/{2,}/g, '/'));
}

/**
 * With `TRUST_PROXY_HOPS=0` every client behind a proxy has the proxy's address, and so shares one
 * refusal limit with all the others: the first request that shows a proxy's `X-Forwarded-For`
 * makes one warning that names the setting.
 */
export function forwardedWithoutTrust(logger: Logger): RequestHandler {
  let warned = false;
  return (req, _res, next) => {
    if (!warned && req.headers['x-forwarded-for'] !== undefined) {
      warned = true;
      logger.warn(
        { setting: 'TRUST_PROXY_HOPS', peer: req.socket.remoteAddress },
        'A request came through a proxy (X-Forwarded-For) while TRUST_PROXY_HOPS=0: every client behind it shares the proxy address and its refusal limit; set TRUST_PROXY_HOPS to the number of proxies',
      );
    }
    next();
  };
}
