import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { z } from 'zod';
import type { AppContext, Actor } from '../context.js';
import { DomainError } from '../errors.js';
import { ifNoneMatch } from './etag.js';
import { densityBudget } from './jsonBudget.js';
import { parseInput } from './problem.js';
import type { AnyRoute, Versioned } from './route.js';

const hasBody = (req: Request) => req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

function parsePart(schema: z.ZodType | undefined, value: unknown, where: string) {
  return schema && parseInput(schema, value ?? {}, `Invalid ${where}`, where === 'body' ? undefined : where);
}

async function authenticate(route: AnyRoute, req: Request, ctx: AppContext): Promise<Actor | undefined> {
  if (route.auth === 'bearer' && route.checksAccount) return ctx.auth.token(req.headers.authorization);
  if (route.auth === 'bearer' || (route.auth === 'sync' && req.header('x-admin-api-key') === undefined)) {
    return ctx.auth.driver(req.headers.authorization);
  }
  if (route.auth === 'admin' || route.auth === 'sync') {
    ctx.auth.admin(req.header('x-admin-api-key'));
    return { kind: 'admin' };
  }
  return undefined;
}

const expressPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');

/** Binds route definitions to express: authenticate, read the body, parse params, query and body apart, call, answer. */
export function registerRoutes(router: Router, routes: AnyRoute[], ctx: AppContext) {
  const jsonParser = express.json({ limit: ctx.config.bodyLimitBytes, verify: densityBudget(ctx.config.bodyLimitBytes) });
  const readJson = (req: Request, res: Response) =>
    new Promise<void>((resolve, reject) => {
      jsonParser(req, res, (error?: unknown) => (error ? reject(error) : resolve()));
    });
  const readInput = async (route: AnyRoute, req: Request, res: Response) => {
    if (route.body) await readJson(req, res);
    // A body the JSON parser left alone (no or another content type) must not pass for an empty one.
    if (route.body && req.body === undefined && hasBody(req)) {
      throw new DomainError('unsupported_media_type', 'Send the body as application/json');
    }
    return {
      params: parsePart(route.params, req.params, 'params'),
      query: parsePart(route.query, req.query, 'query'),
      body: parsePart(route.body, req.body, 'body'),
    };
  };
  for (const route of routes) {
    const handler: RequestHandler = async (req, res) => {
      const actor = await authenticate(route, req, ctx);
      // Only after authentication: a caller without a token gets 401 whatever it sent, and costs no parsing.
      const { params, query, body } = await readInput(route, req, res).catch(async (error: unknown) => {
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
      else res.status(200).json(result);
    };
    router[route.method](expressPath(route.path), handler);
  }
}
