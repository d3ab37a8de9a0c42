import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { useTestServer } from '../helpers/server.js';

/** A concrete path of a route template: every parameter filled with a value its schema would take. */
const concrete = (path: string) =>
  path.replace(/\{(\w+)\}/g, (_all, name: string) => (/id$/i.test(name) ? '018f3a52-7b1c-7000-8000-000000000001' : '1234'));

/** Other spellings of `path` that a client, a proxy or an attacker may send. */
function spellingsOf(path: string): string[] {
  const segments = path.split('/').filter(Boolean);
  const first = segments[0];
  const rest = segments.slice(1).join('/');
  const tail = rest ? `/${rest}` : '';
  const encoded = `%${first.charCodeAt(0).toString(16)}${first.slice(1)}`;
  return [
    path.toUpperCase(),
    `/${first[0].toUpperCase()}${first.slice(1)}${tail}`,
    `${path}/`,
    `/${path}`,
    `/${first}/${tail}`,
    `/${encoded}${tail}`,
  ].filter((spelling) => spelling !== path);
}

describe.each(databaseKinds)('one spelling per route on %s', (kind) => {
  const api = useTestServer(kind, { AUTH_REFUSAL_LIMIT: '100' });

  /** The whole route table, as the service publishes it, with the pages served beside it. */
  async function routeTable() {
    const openApi = (await api.get('/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const routes = Object.entries(openApi.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => ({ method: method.toUpperCase(), path })),
    );
    return [...routes, { method: 'GET', path: '/openapi.json' }, { method: 'GET', path: '/docs' }];
  }

  /** Every spelling whose answer is neither 404 nor its canonical path's answer: one that got past a guard. */
  async function spellingsPastGuards(options: { admin?: true } = {}) {
    const reached: string[] = [];
    const routes = await routeTable();
    expect(routes.map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining(['POST /dev/token', 'GET /admin/reviews', 'POST /sync/push']),
    );
    for (const route of routes) {
      const method = route.method;
      const path = concrete(route.path);
      const canonical = await api.request(method, path, options);
      for (const spelling of spellingsOf(path)) {
        const answer = await api.request(method, spelling, options);
        if (answer.status !== 404 && answer.status !== canonical.status) {
          reached.push(`${method} ${spelling}: ${answer.status}, canonical ${path}: ${canonical.status}`);
        }
      }
    }
    return reached;
  }

  it('answers every other spelling of every route with 404 or with the canonical answer, never past its guards', async () => {
    expect(await spellingsPastGuards()).toEqual([]);
  });

  it.each([
    ['GET', '/ADMIN/reviews'],
    ['GET', '/Admin/reviews'],
    ['GET', '/admin/reviews/'],
    ['GET', '/admin//reviews'],
    ['GET', '//admin/reviews'],
    ['GET', '/admin/%72eviews'],
    ['POST', '/DEV/token'],
  ])('meets 429 by the 101st wrong key on %s %s, or 404 throughout, and the right key gets no further', async (method, path) => {
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 130; attempt++) {
      statuses.push((await api.request(method, path, { admin: `wrong-key-${attempt}-0123456789abcdef` })).status);
    }
    const throughout404 = statuses.every((status) => status === 404);
    expect(throughout404 || statuses.slice(100).every((status) => status === 429), statuses.join(',')).toBe(true);
    expect(statuses.some((status) => status === 200)).toBe(false);
    expect([404, 429]).toContain((await api.request(method, path, { admin: true })).status);
  });

  it('counts refusals on the canonical path so that no other spelling escapes the lock', async () => {
    for (let attempt = 0; attempt < 100; attempt++) await api.get('/admin/reviews', { admin: `wrong-${attempt}-0123456789abcdef` });
    for (const spelling of ['/admin/reviews', '/ADMIN/reviews', '/admin//reviews', '/admin/%72eviews']) {
      expect((await api.get(spelling, { admin: true })).status, spelling).toBe(429);
    }
  });

  it('keeps every spelling of every route behind the refusal limit once this address is locked out', async () => {
    // The previous test left this address locked: every canonical admin and /dev/ path answers 429.
    expect((await api.get('/admin/reviews', { admin: true })).status).toBe(429);
    expect(await spellingsPastGuards({ admin: true })).toEqual([]);
  });
});
