import type { IncomingMessage, ServerResponse } from 'node:http';
import querystring from 'node:querystring';
import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import type { BoundRoute } from './register.js';

/**
 * Answers the routes marked `direct` without express: the same middleware in front (`front`),
 * the same binding of the route and the same error handlers (`fallbacks`), on Node's own request
 * and answer. For a push, express's own work per request (its prototypes set onto both objects,
 * its router's walk through the middleware) was a fifth of the service's CPU, and at 15,000
 * drivers it was much of what kept the main thread two-thirds busy (measured in
 * f511958). Answers false for any other request, which express then serves.
 */
export function directRoutes(routes: Map<string, BoundRoute>, front: RequestHandler[], fallbacks: ErrorRequestHandler[]) {
  return (req: IncomingMessage, res: ServerResponse): boolean => {
    const url = req.url ?? '/';
    const mark = url.indexOf('?');
    const path = mark === -1 ? url : url.slice(0, mark);
    const route = routes.get(`${req.method} ${path}`);
    if (!route) return false;
    // What the middleware and the binding read of express's additions, as express would set them
    // (its query parser is 'simple', Node's querystring).
    const request = Object.assign(req, {
      originalUrl: url,
      path,
      params: {},
      query: querystring.parse(mark === -1 ? '' : url.slice(mark + 1)),
      route: { path },
    }) as unknown as Request;
    const answer = Object.assign(res, { locals: Object.create(null) as Record<string, unknown> }) as unknown as Response;
    const fail = (error: unknown, index = 0): void => {
      if (index < fallbacks.length) fallbacks[index](error, request, answer, (next?: unknown) => fail(next, index + 1));
    };
    const step =
      (index: number) =>
      (error?: unknown): void => {
        if (error) return fail(error);
        if (index === front.length) return void route(request, answer).catch(fail);
        try {
          front[index](request, answer, step(index + 1));
        } catch (thrown) {
          fail(thrown);
        }
      };
    step(0)();
    return true;
  };
}
