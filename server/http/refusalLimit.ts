import type { RequestHandler } from 'express';
import { sendProblem } from './problem.js';

/** Clients tracked at most; past this the oldest windows are forgotten first. */
const maxClients = 10_000;

/**
 * Guessing admin keys (which also mint development tokens) is slowed down: a client address
 * whose requests under `/admin/` and `/dev/` were refused (401) `limit` times within a window
 * gets 429 with `Retry-After` for every such request until the window ends, whatever it sends,
 * so the answer says nothing about a key tried meanwhile.
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
    if (!req.path.startsWith('/admin/') && !req.path.startsWith('/dev/')) return next();
    const client = req.ip ?? 'unknown';
    const window = current(client);
    if (window && window.refusals >= options.limit) {
      res.setHeader('Retry-After', String(Math.max(1, Math.ceil((window.endsAt - now()) / 1000))));
      return sendProblem(res, 'rate_limited', 'Too many refused requests from this address; try again later');
    }
    res.once('finish', () => {
      if (res.statusCode === 401) recordRefusal(client);
    });
    next();
  };
}
