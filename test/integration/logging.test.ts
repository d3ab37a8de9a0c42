import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp } from '../../server/http/app.js';
import { databaseKinds } from '../helpers/databases.js';
import { crashingRoute } from '../helpers/problems.js';
import { TEST_ADMIN_KEY, TestServer, testConfig } from '../helpers/server.js';
import { startServer } from '../../server/server.js';

interface LogLine {
  level: number;
  msg: string;
  req?: { id: string; method: string; url: string };
  res?: { statusCode: number };
  responseTime?: number;
  err?: { message: string; stack: string };
}

describe.each(databaseKinds)('request logging on %s', (kind) => {
  const written: string[] = [];
  let api: TestServer;
  let token: string;

  beforeAll(async () => {
    const logger = pino(
      { level: 'info' },
      {
        write: (line: string) => {
          written.push(line);
        },
      },
    );
    api = new TestServer(await startServer(await testConfig(kind, { LOG_LEVEL: 'info' }), { ephemeral: true, logger }));
    token = await api.token(4501);
  });
  afterAll(async () => {
    await api?.close();
  });

  const linesFor = (requestId: string) => written.map((l) => JSON.parse(l) as LogLine).filter((l) => l.req?.id === requestId);

  it.each<[string, string, number]>([
    ['a success', '/me/cars', 200],
    ['an authentication failure', '/me/cars?date=2026-01-01', 401],
    ['an unknown route', '/nowhere', 404],
  ])('writes one line for %s with method, url, status, response time and request id', async (_what, path, status) => {
    const response = await api.get(path, { token: status === 401 ? 'not-a-token' : token });
    expect(response.status).toBe(status);
    const requestId = response.headers.get('x-request-id')!;
    const lines = linesFor(requestId);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ req: { id: requestId, method: 'GET', url: path }, res: { statusCode: status } });
    expect(lines[0].responseTime).toEqual(expect.any(Number));
  });

  it('writes the error behind a 500 with its stack into the line, at level error', async () => {
    const crash = crashingRoute('the disk is full');
    const server = http.createServer(createHttpApp(api.ctx, [crash]));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/test/crash?x=1`);
      expect(response.status).toBe(500);
      expect(await response.text()).not.toContain('the disk is full');
      const lines = linesFor(response.headers.get('x-request-id')!);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        level: 50,
        msg: 'request errored',
        req: { method: 'GET', url: '/test/crash?x=1' },
        res: { statusCode: 500 },
      });
      expect(lines[0].err?.message).toBe('the disk is full');
      expect(lines[0].err?.stack).toMatch(/helpers\/problems\.ts/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('writes a client error at level warn and a success at level info', async () => {
    const ok = await api.get('/me/cars', { token });
    const missing = await api.get('/nowhere', { token });
    expect(linesFor(ok.headers.get('x-request-id')!)[0]).toMatchObject({ level: 30, msg: 'request completed' });
    expect(linesFor(missing.headers.get('x-request-id')!)[0]).toMatchObject({ level: 40, msg: 'request completed' });
  });

  it('never writes the authorization header or the admin key', async () => {
    await api.get('/me/cars', { token });
    await api.get('/me/cars', { token: `${token}x` });
    await api.get('/health', { admin: true, headers: { cookie: 'session=abc' } });
    await api.get('/nowhere', { admin: 'a-wrong-admin-key-0123456789' });
    const log = written.join('');
    expect(log).not.toContain(token.split('.')[2]);
    expect(log).not.toContain(TEST_ADMIN_KEY);
    expect(log).not.toContain('a-wrong-admin-key');
    expect(log.toLowerCase()).not.toContain('authorization');
    expect(log).not.toContain('session=abc');
  });

  it('redacts every credential a client puts into the query, in any spelling, and keeps the rest', async () => {
    const secret = `${token.split('.')[2]}-in-the-query`;
    const names = [
      'access_token',
      'token',
      'key',
      'api_key',
      'ACCESS_TOKEN',
      'Token',
      'x-admin-api-key',
      'authorization',
      'cookie',
      'access%5Ftoken',
    ];
    for (const name of names) {
      const response = await api.get(`/me/tours?date=2026-01-01&${name}=${secret}`);
      expect(response.status).toBe(401);
      const [line] = linesFor(response.headers.get('x-request-id')!);
      expect(line.req!.url).toBe(`/me/tours?date=2026-01-01&${name}=REDACTED`);
    }
    await api.get(`/admin/reviews?key=${secret}`, { admin: 'a-wrong-admin-key-0123456789' });
    expect(written.join('')).not.toContain(secret);
  });

  it('warns once, naming TRUST_PROXY_HOPS, when a request comes through a proxy the service does not trust', async () => {
    const warnings = () =>
      written.map((l) => JSON.parse(l) as LogLine & { setting?: string }).filter((l) => l.setting === 'TRUST_PROXY_HOPS');
    expect(warnings()).toHaveLength(0);
    await api.get('/health', { headers: { 'x-forwarded-for': '203.0.113.7' } });
    await api.get('/health', { headers: { 'x-forwarded-for': '203.0.113.8' } });
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatchObject({ level: 40 });
    expect(warnings()[0].msg).toContain('TRUST_PROXY_HOPS');
  });
});
