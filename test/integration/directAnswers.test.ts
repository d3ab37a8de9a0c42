import { randomUUID } from 'node:crypto';
import http from 'node:http';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';

const APP = 'https://driver.example.com';

/** A POST through node:http, which (unlike fetch) leaves the body as it came over the wire. */
function post(
  url: string,
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

// The push and /scans are answered before express (http/direct.ts): what every route's answer carries, theirs carry too.
describe.each(databaseKinds)('a push answered before express on %s', (kind) => {
  const api = useTestServer(kind, { CORS_ORIGINS: APP });

  async function line(account: number) {
    const token = await api.token(account);
    const tour = await newTour(api.db, {
      accountId: account,
      positions: [{ scannable: true, quantity: 50, scannedQuantity: 0, state: 'InProgress' }],
    });
    return { token, deliveryItemId: tour.deliveries[0].items[0].id };
  }
  const scans = (deliveryItemId: string, count: number) =>
    Array.from({ length: count }, () => ({
      eventId: randomUUID(),
      occurredAt: new Date().toISOString(),
      type: 'scan',
      deliveryItemId,
      action: 'scan',
    }));

  it('answers with its request id, the CORS headers and a compressed body', async () => {
    const { token, deliveryItemId } = await line(8901);
    const body = JSON.stringify({ clientId: 'phone', events: scans(deliveryItemId, 20) });
    const answer = await post(`${api.url}/sync/push`, body, {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      origin: APP,
      'accept-encoding': 'gzip',
      'x-request-id': 'push-8901',
    });
    expect(answer.status).toBe(200);
    expect(answer.headers['x-request-id']).toBe('push-8901');
    expect(answer.headers['access-control-allow-origin']).toBe(APP);
    expect(answer.headers['access-control-expose-headers']).toMatch(/X-Request-Id/);
    expect(answer.headers.vary).toMatch(/Origin/);
    expect(answer.headers.vary).toMatch(/Accept-Encoding/);
    expect(answer.headers['content-encoding']).toBe('gzip');
    const results = JSON.parse(zlib.gunzipSync(answer.bytes).toString('utf8')).results as { status: string }[];
    expect(results.map((r) => r.status)).toEqual(Array(20).fill('applied'));
  });

  it('refuses as problem+json with a request id: no token 401, another media type 415, a malformed batch 400', async () => {
    const { token } = await line(8902);
    const noToken = await api.post('/sync/push', { clientId: 'phone', events: [] });
    const text = await api.request('POST', '/sync/push', { token, body: 'scan', headers: { 'content-type': 'text/plain' } });
    const malformed = await api.post('/sync/push', { clientId: 'phone', events: [{ type: 'scan' }] }, { token });
    for (const [answer, status, code] of [
      [noToken, 401, 'unauthorized'],
      [text, 415, 'unsupported_media_type'],
      [malformed, 400, 'validation'],
    ] as const) {
      expect(answer.status).toBe(status);
      expect(answer.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      expect(answer.body.code).toBe(code);
      expect(answer.headers.get('x-request-id')).toBeTruthy();
    }
  });

  it('answers POST /scans, the push of older app versions, the same way', async () => {
    const { token, deliveryItemId } = await line(8904);
    const body = JSON.stringify({
      scans: [{ clientScanId: randomUUID(), deliveryItemId, action: 'scan', occurredAt: new Date().toISOString() }],
    });
    const answer = await post(`${api.url}/scans`, body, {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      origin: APP,
      'x-request-id': 'scans-8904',
    });
    expect(answer.status).toBe(200);
    expect(answer.headers['x-request-id']).toBe('scans-8904');
    expect(answer.headers['access-control-allow-origin']).toBe(APP);
    expect(JSON.parse(answer.bytes.toString('utf8')).results[0].status).toBe('applied');
    const refused = await api.post('/scans', { scans: [] });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
  });

  it('applies a push sent with a query string as any other, and answers another spelling of its path with 404', async () => {
    const { token, deliveryItemId } = await line(8903);
    const answer = await api.post('/sync/push?v=2', { clientId: 'phone', events: scans(deliveryItemId, 1) }, { token });
    expect(answer.status).toBe(200);
    expect(answer.body.results[0].status).toBe('applied');
    for (const path of ['/sync/push/', '/SYNC/push', '/sync//push']) {
      const other = await api.post(path, { clientId: 'phone', events: scans(deliveryItemId, 1) }, { token });
      expect(other.status, path).toBe(404);
    }
  });
});
