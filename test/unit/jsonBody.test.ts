import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError, errorCatalogue } from '../../server/errors.js';
import { densityBudget } from '../../server/http/jsonBudget.js';
import { readJsonBody, RequestAborted } from '../../server/http/jsonBody.js';

const LIMIT = 1024;

/** A bare server that answers what the reader made of each request: the body, or the refusal's code. */
let server: http.Server;
let url: string;
const aborted: unknown[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    readJsonBody(req, { limitBytes: LIMIT, check: densityBudget(LIMIT) }).then(
      (body) => res.writeHead(200).end(JSON.stringify({ body: body === undefined ? 'none' : body })),
      (error: unknown) => {
        if (error instanceof RequestAborted) return void aborted.push(error);
        if (!(error instanceof DomainError)) return void res.writeHead(500).end(JSON.stringify({ code: 'unexpected' }));
        res.writeHead(errorCatalogue[error.code].status).end(JSON.stringify({ code: error.code }));
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const send = async (body: string | Buffer | undefined, headers: Record<string, string> = { 'content-type': 'application/json' }) => {
  const response = await fetch(url, { method: 'POST', headers, body: typeof body === 'string' ? body : body && new Uint8Array(body) });
  return { status: response.status, json: (await response.json()) as { body?: unknown; code?: string } };
};

describe('readJsonBody', () => {
  it('parses a JSON object or array', async () => {
    expect(await send('{"n":1}')).toEqual({ status: 200, json: { body: { n: 1 } } });
    expect(await send(' [1,2]', { 'content-type': 'Application/JSON; charset=UTF-8' })).toEqual({ status: 200, json: { body: [1, 2] } });
  });

  it('takes an empty JSON body for an empty object, and leaves a request without a JSON body alone', async () => {
    expect(await send('')).toEqual({ status: 200, json: { body: {} } });
    expect(await send('n=1', { 'content-type': 'application/x-www-form-urlencoded' })).toEqual({ status: 200, json: { body: 'none' } });
    expect(await send('{"n":1}', {})).toEqual({ status: 200, json: { body: 'none' } });
    expect((await fetch(url, { headers: { 'content-type': 'application/json' } })).status).toBe(200);
  });

  it('inflates a body sent with gzip, deflate or br', async () => {
    const json = JSON.stringify({ events: ['a', 'b'] });
    for (const [encoding, bytes] of [
      ['gzip', gzipSync(json)],
      ['deflate', deflateSync(json)],
      ['br', brotliCompressSync(json)],
    ] as const) {
      expect(await send(bytes, { 'content-type': 'application/json', 'content-encoding': encoding }), encoding).toEqual({
        status: 200,
        json: { body: { events: ['a', 'b'] } },
      });
    }
  });

  it('reads UTF-16 and drops a byte order mark', async () => {
    expect(await send(Buffer.from('\ufeff{"n":2}', 'utf16le'), { 'content-type': 'application/json; charset=utf-16le' })).toEqual({
      status: 200,
      json: { body: { n: 2 } },
    });
    expect(await send('\ufeff{"n":3}')).toEqual({ status: 200, json: { body: { n: 3 } } });
  });

  it.each([
    ['malformed JSON', '{"n":', {}, 400, 'validation'],
    ['a top-level number', '1', {}, 400, 'validation'],
    ['a top-level string', '"x"', {}, 400, 'validation'],
    ['a body denser than the budget', `[${'0,'.repeat(200)}0]`, {}, 400, 'validation'],
    ['a charset that is not UTF', '{"n":1}', { 'content-type': 'application/json; charset=latin1' }, 415, 'unsupported_media_type'],
    ['a UTF charset nobody knows', '{"n":1}', { 'content-type': 'application/json; charset=utf-9' }, 415, 'unsupported_media_type'],
    ['an unknown content encoding', '{"n":1}', { 'content-encoding': 'zstd' }, 415, 'unsupported_media_type'],
    ['gzip that does not inflate', 'not gzip at all', { 'content-encoding': 'gzip' }, 400, 'validation'],
    ['a body over the limit', JSON.stringify({ s: 'x'.repeat(LIMIT) }), {}, 413, 'payload_too_large'],
    [
      'gzip that inflates over the limit',
      gzipSync(JSON.stringify({ s: 'x'.repeat(LIMIT * 50) })),
      { 'content-encoding': 'gzip' },
      413,
      'payload_too_large',
    ],
  ] as const)('refuses %s', async (_what, body, headers, status, code) => {
    expect(await send(body, { 'content-type': 'application/json', ...headers })).toEqual({ status, json: { code } });
  });

  it('answers 413 for a chunked body over the limit after reading it, and keeps the connection', async () => {
    const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
    const chunk = 'x'.repeat(600);
    const request = (body: string) =>
      `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n` +
      `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    let received = '';
    socket.on('data', (data) => (received += data));
    socket.write(request(`{"a":"${chunk}","b":"${chunk}"}`));
    socket.write(request('{"n":4}'));
    await expect.poll(() => received.match(/HTTP\/1.1 \d+/g), { timeout: 5000 }).toEqual(['HTTP/1.1 413', 'HTTP/1.1 200']);
    expect(received).toContain('{"body":{"n":4}}');
    socket.destroy();
  });

  it('gives up on a client that goes away in the middle of its body', async () => {
    const before = aborted.length;
    const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
    socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"n":');
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.destroy();
    await expect.poll(() => aborted.length, { timeout: 5000 }).toBe(before + 1);
  });
});
