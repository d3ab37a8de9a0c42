import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { DomainError } from '../../server/errors.js';
import { directRoutes } from '../../server/http/direct.js';
import { problemHandler } from '../../server/http/problem.js';
import { bindRoutes, type BoundRoute } from '../../server/http/register.js';
import type { AnyRoute } from '../../server/http/route.js';
import type { AppContext } from '../../server/context.js';

let server: http.Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** A server answering `POST /hot` directly through `front`, and everything else 404 ("express"). */
async function serve(front: RequestHandler[], route: BoundRoute) {
  const answer = directRoutes(new Map([['POST /hot', route]]), front, [problemHandler]);
  server = http.createServer((req, res) => {
    if (!answer(req, res)) res.writeHead(404).end('not direct');
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return async (path: string, method = 'POST') => {
    const response = await fetch(`${base}${path}`, { method });
    return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
  };
}

const ok: BoundRoute = async (req, res) => {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ path: req.path, query: req.query, route: req.route?.path, locals: typeof res.locals }));
};

describe('routes answered before express', () => {
  it('runs the middleware in order, then the route, with what they read of express set', async () => {
    const seen: string[] = [];
    const mark =
      (name: string): RequestHandler =>
      (_req, _res, next) => {
        seen.push(name);
        next();
      };
    const request = await serve([mark('log'), mark('cors')], ok);
    const answer = await request('/hot?a=1&b=2');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toEqual({ path: '/hot', query: { a: '1', b: '2' }, route: '/hot', locals: 'object' });
    expect(seen).toEqual(['log', 'cors']);
  });

  it('leaves every other method and path to express', async () => {
    const request = await serve([], ok);
    expect(await request('/hot', 'GET')).toMatchObject({ status: 404, text: 'not direct' });
    expect(await request('/hot/')).toMatchObject({ status: 404, text: 'not direct' });
    expect(await request('/HOT')).toMatchObject({ status: 404, text: 'not direct' });
  });

  it('stops where a middleware answers itself', async () => {
    const refuse: RequestHandler = (_req, res) => void res.writeHead(429).end();
    let reached = false;
    const request = await serve([refuse], async (req, res) => {
      reached = true;
      await ok(req, res);
    });
    expect((await request('/hot')).status).toBe(429);
    expect(reached).toBe(false);
  });

  it('answers a rejected route, a middleware that passes an error and one that throws as problem+json', async () => {
    const refused = await serve([], async () => {
      throw new DomainError('validation', 'No good');
    });
    expect(await refused('/hot')).toMatchObject({ status: 400, type: 'application/problem+json; charset=utf-8' });
    await new Promise<void>((resolve) => server!.close(() => resolve()));

    const passes = await serve([(_req, _res, next) => next(new DomainError('forbidden', 'Not yours'))], ok);
    expect((await passes('/hot')).status).toBe(403);
    await new Promise<void>((resolve) => server!.close(() => resolve()));

    const throws = await serve(
      [
        () => {
          throw new Error('a bug');
        },
      ],
      ok,
    );
    const answer = await throws('/hot');
    expect(answer.status).toBe(500);
    expect(JSON.parse(answer.text)).toMatchObject({ code: 'internal' });
  });

  it('takes only a path without parameters and a plain answer', () => {
    const ctx = { config: { bodyLimitBytes: 1024 } } as unknown as AppContext;
    const route = (extra: Partial<AnyRoute>): AnyRoute => ({
      method: 'get',
      path: '/things',
      auth: 'none',
      summary: 'Things',
      tags: ['Test'],
      direct: true,
      handler: async () => ({}),
      ...extra,
    });
    expect(() => bindRoutes([route({ path: '/things/{id}' })], ctx)).toThrow(/direct/);
    expect(() => bindRoutes([route({ conditional: true })], ctx)).toThrow(/direct/);
    expect([...bindRoutes([route({}), route({ method: 'post', direct: false })], ctx).direct.keys()]).toEqual(['GET /things']);
  });
});
