import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { TEST_ADMIN_KEY, TestServer, testConfig } from '../helpers/server.js';
import { startServer } from '../../server/server.js';

interface LogLine { level: number; msg: string; req?: { id: string; method: string; url: string }; res?: { statusCode: number }; responseTime?: number }

describe.each(databaseKinds)('request logging on %s', (kind) => {
  const written: string[] = [];
  let api: TestServer;
  let token: string;

  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (line: string) => { written.push(line); } });
    api = new TestServer(await startServer(await testConfig(kind, { LOG_LEVEL: 'info' }), { ephemeral: true, logger }));
    token = await api.token(4501);
  });
  afterAll(async () => { await api?.close(); });

  const linesFor = (requestId: string) => written.map((l) => JSON.parse(l) as LogLine).filter((l) => l.req?.id === requestId);

  it.each<[string, string, number]>([
    ['a success', '/me/cars', 200],
    ['an authentication failure', '/me/cars?token=x', 401],
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
});
