import { randomUUID } from 'node:crypto';
import http from 'node:http';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { recordChanges } from '../../server/engine/changeLog.js';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { startTestServer, useTestServer } from '../helpers/server.js';

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  bytes: Buffer;
}

/** A request through node:http, which (unlike fetch) leaves the body as it came over the wire. */
function raw(url: string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(chunks) }));
      })
      .on('error', reject);
  });
}

const decode = (r: Raw) => {
  const encoding = r.headers['content-encoding'];
  const bytes = encoding === 'br' ? zlib.brotliDecompressSync(r.bytes) : encoding === 'gzip' ? zlib.gunzipSync(r.bytes) : r.bytes;
  return JSON.parse(bytes.toString('utf8'));
};

describe.each(databaseKinds)('compressed answers on %s', (kind) => {
  const api = useTestServer(kind);

  async function bigTour() {
    const token = await api.token(8201);
    const tour = await newTour(api.db, { accountId: 8201, deliveries: 6 });
    return { token, url: `${api.url}/tours/${tour.tour.id}`, auth: { authorization: `Bearer ${token}` } };
  }

  it.each([
    ['br', 'br'],
    ['gzip', 'gzip'],
    ['gzip, deflate, br', 'br'],
    ['br;q=0.5, gzip', 'gzip'],
    ['deflate', 'deflate'],
  ])('answers a tour over 1 KB to Accept-Encoding: %s with %s, the same JSON as uncompressed', async (accept, expected) => {
    const { url, auth } = await bigTour();
    const plain = await raw(url, auth);
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.bytes.length).toBeGreaterThan(1024);
    const packed = await raw(url, { ...auth, 'accept-encoding': accept });
    expect(packed.status).toBe(200);
    expect(packed.headers['content-encoding']).toBe(expected);
    expect(packed.headers.vary).toMatch(/Accept-Encoding/i);
    expect(packed.bytes.length).toBeLessThan(plain.bytes.length / 2);
    if (expected !== 'deflate') expect(decode(packed)).toEqual(JSON.parse(plain.bytes.toString('utf8')));
  });

  it.each(['identity', 'compress', '*;q=0', 'gzip;q=0', 'br;q=abc', ';;;', 'x'.repeat(500)])(
    'answers uncompressed JSON to Accept-Encoding: %s',
    async (accept) => {
      const { url, auth } = await bigTour();
      const response = await raw(url, { ...auth, 'accept-encoding': accept });
      expect(response.status).toBe(200);
      expect(response.headers['content-encoding']).toBeUndefined();
      expect(JSON.parse(response.bytes.toString('utf8'))).toHaveProperty('deliveries');
    },
  );

  it('leaves answers under COMPRESSION_MIN_BYTES uncompressed', async () => {
    const { auth } = await bigTour();
    const response = await raw(`${api.url}/sync/cursor`, { ...auth, 'accept-encoding': 'gzip, br' });
    expect(response.status).toBe(200);
    expect(response.headers['content-encoding']).toBeUndefined();
  });

  it('keeps one ETag for every encoding and answers If-None-Match with an empty 304', async () => {
    const { url, auth } = await bigTour();
    const plain = await raw(url, auth);
    const packed = await raw(url, { ...auth, 'accept-encoding': 'gzip' });
    expect(packed.headers.etag).toBe(plain.headers.etag);
    for (const encoding of ['gzip', 'br', 'identity']) {
      const again = await raw(url, { ...auth, 'accept-encoding': encoding, 'if-none-match': plain.headers.etag! });
      expect(again.status).toBe(304);
      expect(again.bytes.length).toBe(0);
      expect(again.headers['content-encoding']).toBeUndefined();
    }
  });

  it('gives an ETag only to the conditional reads: not to the tour list, nor to a push', async () => {
    const { token, url } = await bigTour();
    expect((await api.get('/me/tours', { token })).headers.get('etag')).toBeNull();
    const hold = {
      eventId: randomUUID(),
      occurredAt: new Date().toISOString(),
      type: 'delivery.hold',
      deliveryId: randomUUID(),
      reason: 'Kunde nicht da',
    };
    const pushed = await api.post('/sync/push', { clientId: 'phone-1', events: [hold] }, { token });
    expect(pushed.status).toBe(200);
    expect(pushed.headers.get('etag')).toBeNull();
    expect((await api.get(url.slice(api.url.length), { token })).headers.get('etag')).toMatch(/^"[^"]+"$/);
  });
});

describe.each(databaseKinds)('compression of bodies that are compressed already on %s', (kind) => {
  it('never compresses an image, even with COMPRESSION_MIN_BYTES=0, while a tiny JSON answer then is', async () => {
    const api = await startTestServer(kind, { COMPRESSION_MIN_BYTES: '0' });
    try {
      const image = await raw(`${api.url}/docs/assets/favicon-32x32.png`, { 'accept-encoding': 'gzip, br' });
      expect(image.status).toBe(200);
      expect(image.headers['content-type']).toBe('image/png');
      expect(image.headers['content-encoding']).toBeUndefined();
      const token = await api.token(8202);
      const cursor = await raw(`${api.url}/sync/cursor`, { authorization: `Bearer ${token}`, 'accept-encoding': 'gzip' });
      expect(cursor.headers['content-encoding']).toBe('gzip');
      expect(decode(cursor)).toHaveProperty('cursor');
    } finally {
      await api.close();
    }
  }, 90_000);
});

describe.each(databaseKinds)('WebSocket permessage-deflate on %s', (kind) => {
  const api = useTestServer(kind);

  /** Resumes from the start and reads the first page of changes; returns it and the bytes the socket read. */
  async function firstPage(token: string, perMessageDeflate: boolean) {
    const ws = new WebSocket(`${api.url.replace(/^http/, 'ws')}/sync/ws`, {
      headers: { authorization: `Bearer ${token}` },
      perMessageDeflate,
    });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const page = new Promise<{ changes: unknown[] }>((resolve) => ws.once('message', (data) => resolve(JSON.parse(data.toString()))));
    ws.send(JSON.stringify({ type: 'resume' }));
    const message = await page;
    const read = (ws as unknown as { _socket: { bytesRead: number } })._socket.bytesRead;
    const { extensions } = ws;
    ws.close();
    return { message, read, extensions };
  }

  /** `count` notes of the account in the change log: about 300 bytes of JSON each. */
  const recordNotes = (accountId: number, count: number) => {
    const now = new Date().toISOString();
    return recordChanges(
      api.db,
      Array.from({ length: count }, (_, i) => ({
        entity: 'note' as const,
        op: 'upsert' as const,
        id: `n-${i}`,
        accountId,
        data: {
          id: `n-${i}`,
          deliveryId: 'd-1',
          text: `Bitte beim Nachbarn klingeln, Hinterhof links ${i}`,
          imageAttachment: null,
          imageAttachmentId: null,
          authorCarId: null,
          creditDeliveryItemId: null,
          isAmountCreditNote: false,
          createdAt: now,
          updatedAt: now,
        },
      })),
    );
  };

  it('sends a large page compressed to a client that offers it, and the same page plainly to one that does not', async () => {
    const token = await api.token(8203);
    await recordNotes(8203, 40);
    const packed = await firstPage(token, true);
    const plain = await firstPage(token, false);
    expect(packed.extensions).toContain('permessage-deflate');
    expect(plain.extensions).toBe('');
    expect(packed.message).toEqual(plain.message);
    expect(plain.message.changes).toHaveLength(40);
    expect(packed.read).toBeLessThan(plain.read / 2);
  });

  it('sends a message of a few KB plainly, even to a client that offers compression', async () => {
    const token = await api.token(8204);
    await recordNotes(8204, 10);
    const small = await firstPage(token, true);
    expect(small.extensions).toContain('permessage-deflate');
    expect(small.message.changes).toHaveLength(10);
    const length = JSON.stringify(small.message).length;
    expect(length).toBeGreaterThan(2048);
    expect(length).toBeLessThan(8192);
    expect(small.read).toBeGreaterThanOrEqual(length);
  });
});
