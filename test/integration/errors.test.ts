import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { errorCodes } from '../../shared/schemas/common.js';
import { DomainError, errorCatalogue } from '../../server/errors.js';
import { createHttpApp } from '../../server/http/app.js';
import { route } from '../../server/http/route.js';
import { databaseKinds } from '../helpers/databases.js';
import { crashingRoute, expectProblem } from '../helpers/problems.js';
import { useTestServer, type ApiResponse } from '../helpers/server.js';
import { inProcess } from '../helpers/target.js';

const BODY_LIMIT = 1024;

/** Routes that fail the ways handlers can fail, served by an app built like the real one. */
const failingRoutes = [
  crashingRoute('connection to 10.0.0.7 refused; password=hunter2'),
  route({
    method: 'get',
    path: '/test/domain',
    auth: 'none',
    tags: ['Test'],
    summary: 'throws a domain error',
    handler: async () => {
      throw new DomainError('conflict', 'The thing is still referenced');
    },
  }),
  route({
    method: 'get',
    path: '/test/upload',
    auth: 'none',
    tags: ['Test'],
    summary: 'a failed upload (500 by the spec)',
    handler: async () => {
      throw new DomainError('internal', 'Upload to the document store failed', undefined, 500);
    },
  }),
  route({
    method: 'post',
    path: '/test/echo',
    auth: 'none',
    tags: ['Test'],
    summary: 'echoes a validated body',
    body: z.object({ n: z.number().int() }),
    response: z.object({ n: z.number() }),
    handler: async ({ body }) => body,
  }),
];

describe.each(databaseKinds)('errors on %s', (kind) => {
  const api = useTestServer(kind, { BODY_LIMIT_BYTES: String(BODY_LIMIT) });
  let token: string;
  beforeAll(async () => {
    token = await api.token(4001);
  });

  it.each(['GET /nowhere', 'POST /me/cars/extra/segments', 'DELETE /me/cars'])(
    'answers 404 not_found for the unknown route %s',
    async (line) => {
      const [method, path] = line.split(' ');
      expectProblem(await api.request(method, path, { token }), 404, 'not_found');
    },
  );

  it.each([
    ['headers over the size limit', `GET /me/cars HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'payload_too_large'],
    ['a length that is not a number', 'GET /me/cars HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400, 'validation'],
    ['a broken chunk size', 'POST /me/cars HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', 400, 'validation'],
  ])('answers a request Node cannot parse (%s) with problem+json and closes', async (_what, raw, status, code) => {
    const { port } = new URL(api.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => socket.write(raw));
      let received = '';
      socket.on('data', (chunk) => {
        received += chunk;
      });
      socket.on('end', () => resolve(received));
      socket.on('error', reject);
    });
    const [head, body] = answer.split('\r\n\r\n');
    expect(head).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
    expect(head).toMatch(/content-type: application\/problem\+json/i);
    expect(head).toMatch(/x-request-id: [\w-]+/i);
    expect(head).toMatch(/x-content-type-options: nosniff/i);
    expect(JSON.parse(body)).toMatchObject({ status, code, title: errorCatalogue[code as keyof typeof errorCatalogue].title });
  });

  it('answers 400 validation for malformed JSON', async () => {
    expectProblem(
      await api.post('/me/cars', '{"plate": "B-X', { token, headers: { 'content-type': 'application/json' } }),
      400,
      'validation',
    );
  });

  it('answers 400 validation with field problems for a body that misses its schema', async () => {
    const response = await api.post('/me/cars', { plate: 7 }, { token });
    expectProblem(response, 400, 'validation');
    expect(response.body.errors).toEqual([{ path: 'plate', message: expect.any(String) }]);
  });

  it('answers 400 validation naming the field for text with a NUL character, in a body, a path, a query or an event, and stores nothing', async () => {
    const car = await api.post('/me/cars', { plate: 'B-\u0000X' }, { token });
    expectProblem(car, 400, 'validation');
    expect(car.body.errors).toEqual([{ path: 'plate', message: 'must not contain NUL characters or unpaired surrogates' }]);
    expect((await api.get('/me/cars', { token })).body.cars).toEqual([]);
    expectProblem(await api.get('/admin/belege/a%00b', { admin: true }), 400, 'validation');
    expectProblem(await api.get('/sync/changes?since=%00', { token }), 400, 'validation');
    const push = await api.post(
      '/sync/push',
      {
        clientId: 'c',
        events: [
          {
            eventId: crypto.randomUUID(),
            occurredAt: new Date().toISOString(),
            type: 'note.create',
            deliveryId: crypto.randomUUID(),
            noteId: crypto.randomUUID(),
            text: '\u0000',
          },
        ],
      },
      { token },
    );
    expectProblem(push, 400, 'validation');
    expect(push.body.errors[0].path).toBe('events.0.text');
  });

  it('answers 400 validation for text with half a surrogate pair, which is no character', async () => {
    const car = await api.post('/me/cars', '{"plate": "B-\\ud800"}', { token, headers: { 'content-type': 'application/json' } });
    expectProblem(car, 400, 'validation');
    expect(car.body.errors).toEqual([{ path: 'plate', message: 'must not contain NUL characters or unpaired surrogates' }]);
    const push = await api.post('/sync/push', '{"clientId": "\\udc00", "events": []}', {
      token,
      headers: { 'content-type': 'application/json' },
    });
    expectProblem(push, 400, 'validation');
    // A whole pair is a character like any other.
    expect((await api.post('/me/cars', { plate: 'B-📦 1' }, { token: await api.token(4002) })).status).toBe(200);
  });

  it('answers 400 for a path segment that is not valid percent-encoding', async () => {
    expectProblem(await api.get('/accounts/%E0%A4%A', { token }), 400, 'validation');
  });

  it('answers 413 payload_too_large for a body over BODY_LIMIT_BYTES and stores nothing', async () => {
    const plate = 'X'.repeat(BODY_LIMIT * 2);
    expectProblem(await api.post('/me/cars', { plate }, { token }), 413, 'payload_too_large');
    expect((await api.get('/me/cars', { token })).body.cars).toEqual([]);
  });

  it('answers 415 for a body that is not JSON on a JSON endpoint', async () => {
    expectProblem(
      await api.post('/me/cars', 'plate=B-X', { token, headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      415,
      'unsupported_media_type',
    );
    expectProblem(await api.post('/me/cars', 'B-X', { token, headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
  });

  it('answers 415 for a body sent without a content type, instead of taking it for an empty one', async () => {
    const car = (await api.post('/me/cars', { plate: 'B-CT 1' }, { token })).body.car;
    const response = await fetch(`${api.url}/me/cars/${car.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${token}` },
      body: new TextEncoder().encode('{"plate":"B-CT 2","active":false}'),
    });
    expect(response.status).toBe(415);
    expect(await response.json()).toMatchObject({ status: 415, code: 'unsupported_media_type' });
    expect((await api.get('/me/cars', { token })).body.cars.find((c: { id: string }) => c.id === car.id)).toMatchObject({
      plate: 'B-CT 1',
      active: true,
    });
  });

  it('answers 415 for JSON in a charset other than UTF', async () => {
    expectProblem(
      await api.post('/me/cars', '{"plate":"B-X"}', { token, headers: { 'content-type': 'application/json; charset=latin1' } }),
      415,
      'unsupported_media_type',
    );
  });

  it('reads a body its client compressed with gzip, and refuses one that does not inflate', async () => {
    const post = (body: Uint8Array) =>
      fetch(`${api.url}/me/cars`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-encoding': 'gzip' },
        body: new Uint8Array(body),
      });
    const created = await post(gzipSync('{"plate":"B-GZ 1"}'));
    expect(created.status).toBe(200);
    expect(await created.json()).toMatchObject({ car: { plate: 'B-GZ 1' } });
    const broken = await post(new TextEncoder().encode('{"plate":"B-GZ 2"}'));
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ code: 'validation', detail: 'The body is not valid JSON' });
    expect((await api.get('/me/cars', { token })).body.cars.map((c: { plate: string }) => c.plate)).not.toContain('B-GZ 2');
  });

  it('answers 401 before looking at the body of a protected endpoint', async () => {
    expectProblem(await api.post('/me/cars', '{"plate": ', { headers: { 'content-type': 'text/plain' } }), 401, 'unauthorized');
    expectProblem(await api.post('/me/cars', '{"plate": ', { headers: { 'content-type': 'application/json' } }), 401, 'unauthorized');
    expectProblem(await api.post('/me/cars', { plate: 'X'.repeat(BODY_LIMIT * 2) }), 401, 'unauthorized');
    expectProblem(
      await api.post('/admin/mark-mail-sent', '{"belegnummern": ', { headers: { 'content-type': 'application/json' } }),
      401,
      'unauthorized',
    );
  });

  inProcess.describe('thrown errors', () => {
    let server: http.Server;
    let base: string;
    beforeAll(async () => {
      server = http.createServer(createHttpApp(api.ctx, failingRoutes));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      await new Promise((resolve) => server.close(resolve));
    });

    async function call(path: string, init?: RequestInit): Promise<ApiResponse> {
      const response = await fetch(`${base}${path}`, init);
      const text = await response.text();
      return { status: response.status, headers: response.headers, text, body: JSON.parse(text) };
    }

    it('answers an unexpected error with 500 internal and no stack trace or message', async () => {
      const response = await call('/test/crash');
      expectProblem(response, 500, 'internal');
      expect(response.text).not.toMatch(/hunter2|10\.0\.0\.7|at .*\.ts|Error:/);
      expect(Object.keys(response.body).sort()).toEqual(['code', 'detail', 'status', 'title', 'type']);
    });

    it('answers a domain error with the status of its code', async () => {
      const response = await call('/test/domain');
      expectProblem(response, 409, 'conflict');
      expect(response.body.detail).toBe('The thing is still referenced');
    });

    it('answers a failed upload with 500 as the spec asks', async () => {
      expectProblem(await call('/test/upload'), 500, 'internal');
    });

    it('validates the body of a route', async () => {
      expect((await call('/test/echo', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":3}' })).body).toEqual(
        { n: 3 },
      );
      expectProblem(
        await call('/test/echo', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":"3"}' }),
        400,
        'validation',
      );
    });
  });

  describe('request ids', () => {
    it('returns a fresh X-Request-Id on every response', async () => {
      const [a, b] = await Promise.all([api.get('/health'), api.get('/nowhere')]);
      expect(a.headers.get('x-request-id')).toMatch(/^[\w.-]+$/);
      expect(b.headers.get('x-request-id')).toMatch(/^[\w.-]+$/);
      expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
    });

    it('echoes a valid incoming X-Request-Id', async () => {
      const response = await api.get('/health', { headers: { 'x-request-id': 'app-4711.retry-2' } });
      expect(response.headers.get('x-request-id')).toBe('app-4711.retry-2');
    });

    it.each(['has spaces', 'x'.repeat(101), '<script>'])('replaces the invalid incoming X-Request-Id %j', async (incoming) => {
      const response = await api.get('/health', { headers: { 'x-request-id': incoming } });
      expect(response.headers.get('x-request-id')).not.toBe(incoming);
      expect(response.headers.get('x-request-id')).toMatch(/^[\w.-]+$/);
    });
  });
});

describe('the error catalogue', () => {
  it('has an entry with status, title and cause for every code', () => {
    expect(Object.keys(errorCatalogue).sort()).toEqual([...errorCodes].sort());
    for (const entry of Object.values(errorCatalogue)) {
      expect(entry.status).toBeGreaterThanOrEqual(400);
      expect(entry.title.length).toBeGreaterThan(0);
      expect(entry.cause.length).toBeGreaterThan(0);
    }
    expect(errorCatalogue.unauthorized.title).toBe('Authentifizierung fehlgeschlagen');
  });
});
