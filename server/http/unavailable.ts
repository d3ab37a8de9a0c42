import type { ErrorRequestHandler } from 'express';
import { isDatabaseUnavailable, type DatabaseHealth } from '../db/availability.js';
import { unavailable } from '../errors.js';

/** Seconds a client is asked to wait before it tries again after a 503. */
export const RETRY_AFTER_SECONDS = 2;
export const DATABASE_UNAVAILABLE = 'The database is unavailable; try again shortly';

/**
 * A request that failed because the database is out of reach or too busy is answered 503
 * `upstream_unavailable` with Retry-After, not 500: nothing is wrong with the request or the
 * code, and the client should send it again. The outage is logged by `health`, not here; the
 * problem handler renders the answer.
 */
export function answerDatabaseUnavailable(health: DatabaseHealth): ErrorRequestHandler {
  return (error, _req, res, next) => {
    if (res.headersSent || !isDatabaseUnavailable(error)) return next(error);
    health.failed(error);
    next(unavailable(DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS));
  };
}
