import express, { type Request, type RequestHandler, type Response } from 'express';
import type { z } from 'zod';
import type { AppContext, Actor } from '../context.js';
import { DomainError } from '../errors.js';
import { checkClient } from './clientWindow.js';
import { ifNoneMatch } from './etag.js';
import { densityBudget } from './jsonBudget.js';
import { readJsonBody } from './jsonBody.js';
import { parseInput } from './problem.js';
import { sendJson } from './sendJson.js';
import type { AnyRoute, Versioned } from './route.js';

const hasBody = (req: Request) => req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

function parsePart(schema: z.ZodType | undefined, value: unknown, where: string) {
  return schema && parseInput(schema, value ?? {}, `Invalid ${where}`, where === 'body' ? undefined : where);
}

async function authenticate(route: AnyRoute, req: Request, ctx: AppContext): Promise<Actor | undefined> {
  // Node's own header map: a route answered directly has no express request.
  const adminKey = req.headers['x-admin-api-key'] as string | undefined;
  const driver = route.auth === 'bearer' || (route.auth === 'sync' && adminKey === undefined);
  // Before the token: an app too old to be served learns that whatever its token says.
  if (driver) checkClient(req, ctx.config.clientMinVersion);
  if (route.auth === 'bearer' && route.checksAccount) return ctx.auth.token(req.headers.authorization);
  if (driver) {
    return ctx.auth.driver(req.headers.authorization);
  }
  // The machine key when it is sent, else a person's back-office token.
  if (route.auth === 'admin' && adminKey === undefined && req.headers.authorization !== undefined) {
    return { kind: 'admin', person: await ctx.auth.backOffice(req.headers.authorization) };
  }
  if (route.auth === 'admin' || route.auth === 'sync') {
    ctx.auth.admin(adminKey);
    return { kind: 'admin' };
  }
  return undefined;
}

const expressPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');

/** A route bound to a request: authenticates, reads the input, calls, answers; a failure rejects. */
export type BoundRoute = (req: Request, res: Response) => Promise<void>;

/**
 * Binds route definitions: authenticate, read the body, parse params, query and body apart, call,
 * answer. `router` serves them in express. A path without parameters is found in a map by method
 * and path, before express's router, which tries every route's pattern in turn (the router still
 * answers the rest: parameters, HEAD, OPTIONS; matching case and slashes exactly). `direct`
 * holds the routes answered before express (`direct`), by `METHOD path`.
 */
export function bindRoutes(routes: AnyRoute[], ctx: AppContext): { router: RequestHandler; direct: Map<string, BoundRoute> } {
  const checkDensity = densityBudget(ctx.config.bodyLimitBytes);
  const readInput = async (route: AnyRoute, req: Request) => {
    const limitBytes = Math.min(route.bodyLimitBytes ?? Infinity, ctx.config.bodyLimitBytes);
    const json = route.body ? await readJsonBody(req, { limitBytes, check: checkDensity }) : undefined;
    // A body that is not JSON (no or another content type) must not pass for an empty one.
    if (route.body && json === undefined && hasBody(req)) {
      throw new DomainError('unsupported_media_type', 'Send the body as application/json');
    }
    return {
      params: parsePart(route.params, req.params, 'params'),
      query: parsePart(route.query, req.query, 'query'),
      body: parsePart(route.body, json, 'body'),
    };
  };
  const router = express.Router({ caseSensitive: true, strict: true });
  const exact = new Map<string, RequestHandler>();
  const direct = new Map<string, BoundRoute>();
  for (const route of routes) {
    const path = expressPath(route.path);
    const handler: BoundRoute = async (req, res) => {
      const actor = await authenticate(route, req, ctx);
      // Only after authentication: a caller without a token gets 401 whatever it sent, and costs no parsing.
      const { params, query, body } = await readInput(route, req).catch(async (error: unknown) => {
        // Nor does a deactivated account whose account the handler was to read.
        if (actor?.kind === 'driver' && actor.accountUnread) await ctx.auth.account(actor);
        throw error;
      });
      const result = await route.handler({ params, query, body, actor, ctx, req, res });
      if (res.headersSent) return;
      if (route.conditional) {
        const { version, body: json } = result as Versioned;
        const etag = `"${version}"`;
        res.set('ETag', etag);
        if (ifNoneMatch(req.header('if-none-match'), etag)) res.status(304).end();
        else res.type('json').send(json);
      } else if (route.status === 204) res.status(204).end();
      else sendJson(res, 200, result);
    };
    router[route.method](path, handler);
    if (route.direct && (path !== route.path || route.conditional)) {
      throw new Error(`${route.method} ${route.path}: only a path without parameters and a plain answer can be direct`);
    }
    // A direct route's request never reaches express; its router entry answers OPTIONS (the methods allowed).
    if (route.direct) direct.set(`${route.method.toUpperCase()} ${path}`, handler);
    else if (path === route.path) {
      // What express's router sets on a match: the latency metric and tracing name the route by it.
      const matched = { path };
      exact.set(`${route.method.toUpperCase()} ${path}`, (req, res, next) => {
        req.route = matched;
        req.params = {};
        handler(req, res).catch(next);
      });
    }
  }
  return {
    router: (req, res, next) => {
      const handler = exact.get(`${req.method} ${req.path}`);
      if (handler) handler(req, res, next);
      else router(req, res, next);
    },
    direct,
  };
}
