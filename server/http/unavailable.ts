import type { ErrorRequestHandler } from 'express';
import { isDatabaseUnavailable, type DatabaseHealth } from '../db/availability.js';
import { sendProblem } from './problem.js';

/** Seconds a client is asked to wait before it tries again after a 503. */
export const RETRY_AFTER_SECONDS = 2;
export const DATABASE_UNAVAILABLE = 'The database is unavailable; try again shortly';

/**
 * A request that failed because the database is out of reach or too busy is answered 503
 * `upstream_unavailable` with Retry-After, not 500: nothing is wrong with the request or the
 * code, and the client should send it again. The outage is logged by `health`, not here.
 */
export function answerDatabaseUnavailable(health: DatabaseHealth): ErrorRequestHandler {
  return (error, _req, res, next) => {
    if (res.headersSent || !isDatabaseUnavailable(error)) return next(error);
    health.failed(error);
    res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
    sendProblem(res, 'upstream_unavailable', DATABASE_UNAVAILABLE, undefined, 503);
  };
}
