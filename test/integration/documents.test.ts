import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { attachments } from '../../server/db/schema.js';
import { DomainError } from '../../server/errors.js';
import { createHttpDocumentStore } from '../../server/integrations/documents/http.js';
import { createLocalDocumentStore } from '../../server/integrations/documents/local.js';
import { createDocumentStore } from '../../server/integrations/documents/store.js';
import { databaseKinds } from '../helpers/databases.js';
import { documentStoreContract } from '../helpers/documentStoreContract.js';
import { newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';
import { completionForm } from '../helpers/uploads.js';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Every file below a directory, relative to it. */
function filesBelow(root: string): string[] {
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)));
}

async function rejection(promise: Promise<unknown>): Promise<DomainError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
}

describe('local document store', () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tourline-docs-test-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  documentStoreContract('local', () => createLocalDocumentStore(dataDir));

  it('addresses content by its sha256: the reference names the hash and equal bytes are stored once', async () => {
    const store = createLocalDocumentStore(dataDir);
    const bytes = Buffer.from(`Lieferschein ${randomUUID()}`);
    const reference = await store.put(bytes, 'text/plain', 'a.txt');
    expect(reference).toBe(`~sha256/${sha256(bytes)}`);
    expect(await store.put(Buffer.from(bytes), 'text/plain', 'b.txt')).toBe(reference);
    expect(filesBelow(path.join(dataDir, 'documents')).filter((f) => f.includes(sha256(bytes)) && !f.endsWith('.json'))).toHaveLength(1);
    expect(await store.get(reference)).toEqual({ bytes, contentType: 'text/plain' });
    expect(await store.put(Buffer.from('other bytes'), 'text/plain')).not.toBe(reference);
  });

  it('keeps its files under DATA_DIR/documents', async () => {
    const store = createLocalDocumentStore(dataDir);
    expect(store.root).toBe(path.join(dataDir, 'documents'));
    const bytes = Buffer.from(randomUUID());
    await store.put(bytes, 'application/octet-stream');
    const hex = sha256(bytes);
    expect(readFileSync(path.join(dataDir, 'documents', 'sha256', hex.slice(0, 2), hex))).toEqual(bytes);
  });

  it('writes atomically: no temporary file stays behind, also when many writers store the same bytes at once', async () => {
    const store = createLocalDocumentStore(dataDir);
    const bytes = Buffer.alloc(2 * 1024 * 1024, 7);
    const references = await Promise.all(Array.from({ length: 8 }, () => store.put(bytes, 'application/octet-stream')));
    expect(new Set(references).size).toBe(1);
    expect((await store.get(references[0])).bytes.equals(bytes)).toBe(true);
    expect(filesBelow(store.root).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('fails a write whose final rename fails, leaving neither a partial nor a temporary file', async () => {
    const store = createLocalDocumentStore(dataDir);
    const bytes = Buffer.from(`blocked ${randomUUID()}`);
    const hex = sha256(bytes);
    // A directory where the file should go makes the rename fail after the bytes were written.
    const blocked = path.join(store.root, 'sha256', hex.slice(0, 2), hex);
    mkdirSync(path.join(blocked, 'occupied'), { recursive: true });
    await expect(store.put(bytes, 'text/plain')).rejects.toThrow();
    expect(readdirSync(path.dirname(blocked)).filter((f) => f.startsWith(hex) && f !== hex)).toEqual([]);
    await expect(store.get(`~sha256/${hex}`)).rejects.toThrow();
  });

  it.each(['~sha256/' + 'a'.repeat(64), '~sha256/../../etc/passwd', 'sha256/abc', '~other/1', ''])(
    'answers not_found for the reference %j',
    async (reference) => {
      const store = createLocalDocumentStore(dataDir);
      expect((await rejection(store.get(reference))).code).toBe('not_found');
    },
  );

  it('uses a temporary directory without a data directory and removes it on close', async () => {
    const store = createLocalDocumentStore(undefined);
    const reference = await store.put(Buffer.from('x'), 'text/plain');
    expect(existsSync(store.root)).toBe(true);
    expect((await store.get(reference)).bytes.toString()).toBe('x');
    await store.close!();
    expect(existsSync(store.root)).toBe(false);
  });
});

describe('HTTP document store', () => {
  const base = 'https://documents.example.test/api';
  const uploads: { body: Buffer; contentType: string | null; name: string | null; authorization: string | null }[] = [];
  const stored = new Map<string, { bytes: Buffer; contentType: string }>();
  const msw = setupServer(
    http.post(`${base}/documents`, async ({ request }) => {
      const body = Buffer.from(await request.arrayBuffer());
      uploads.push({
        body,
        contentType: request.headers.get('content-type'),
        name: request.headers.get('x-document-name'),
        authorization: request.headers.get('authorization'),
      });
      const reference = `~store/${sha256(body).slice(0, 16)}`;
      stored.set(reference, { bytes: body, contentType: request.headers.get('content-type') ?? 'application/octet-stream' });
      return HttpResponse.json({ reference }, { status: 201 });
    }),
    http.get(`${base}/documents/:reference/preview`, ({ params, request }) => {
      const reference = decodeURIComponent(String(params.reference));
      if (!stored.has(reference)) return new HttpResponse(null, { status: 404 });
      const query = new URL(request.url).searchParams;
      return new HttpResponse(Buffer.from(`preview ${query.get('w')}x${query.get('h')} ${query.get('ext')} p${query.get('page')}`), {
        headers: { 'content-type': 'image/jpeg' },
      });
    }),
    http.get(`${base}/documents/:reference`, ({ params }) => {
      const document = stored.get(decodeURIComponent(String(params.reference)));
      if (!document) return new HttpResponse(null, { status: 404 });
      return new HttpResponse(new Uint8Array(document.bytes), { headers: { 'content-type': document.contentType } });
    }),
  );
  beforeAll(() => msw.listen({ onUnhandledRequest: 'bypass' }));
  afterEach(() => msw.resetHandlers());
  afterAll(() => msw.close());

  const store = createHttpDocumentStore({ url: `${base}/`, token: 'store-token' });
  documentStoreContract('HTTP', () => store);

  it('uploads the bytes with their type, name and token and returns the store reference', async () => {
    const bytes = Buffer.from(`%PDF-1.7 ${randomUUID()}`);
    const reference = await store.put(bytes, 'application/pdf', 'Lieferbericht LS-1.pdf');
    expect(reference.startsWith('~store/')).toBe(true);
    const upload = uploads.at(-1)!;
    expect(upload).toMatchObject({ contentType: 'application/pdf', authorization: 'Bearer store-token' });
    expect(decodeURIComponent(upload.name!)).toBe('Lieferbericht LS-1.pdf');
    expect(upload.body.equals(bytes)).toBe(true);
    expect(await store.get(reference)).toEqual({ bytes, contentType: 'application/pdf' });
  });

  it('answers not_found for a reference the store does not know', async () => {
    expect((await rejection(store.get('~store/unknown'))).code).toBe('not_found');
  });

  it('uses the preview the store renders, and renders itself where the store offers none', async () => {
    const reference = await store.put(Buffer.from('image'), 'image/png');
    const preview = await store.preview!(reference, { width: 300, height: 200, quality: 80, format: 'webp', page: 1 });
    expect(preview!.bytes.toString()).toBe('preview 300x200 webp p1');
    msw.use(http.get(`${base}/documents/:reference/preview`, () => new HttpResponse(null, { status: 501 })));
    expect(await store.preview!(reference, { width: 300, height: 200, quality: 80, format: 'webp', page: 1 })).toBeUndefined();
  });

  it.each([
    ['an error status', () => new HttpResponse('down', { status: 503 })],
    ['an answer without a ~ reference', () => HttpResponse.json({ reference: 'plain/key' })],
    ['an answer that is not JSON', () => new HttpResponse('ok', { status: 200 })],
    ['a network error', () => HttpResponse.error()],
  ])('turns %s on upload into upstream_unavailable', async (_what, answer) => {
    msw.use(http.post(`${base}/documents`, answer));
    expect((await rejection(store.put(Buffer.from('x'), 'text/plain'))).code).toBe('upstream_unavailable');
  });

  it('turns a failing download into upstream_unavailable', async () => {
    msw.use(http.get(`${base}/documents/:reference`, () => new HttpResponse(null, { status: 500 })));
    expect((await rejection(store.get('~store/any'))).code).toBe('upstream_unavailable');
  });

  it('is chosen by DOCUMENT_STORE=http with DOCUMENT_STORE_URL', async () => {
    const config = loadConfig({
      DOCUMENT_STORE: 'http',
      DOCUMENT_STORE_URL: base,
      DOCUMENT_STORE_TOKEN: 'store-token',
      LOG_LEVEL: 'silent',
    });
    const configured = createDocumentStore(config.documents, undefined);
    const reference = await configured.put(Buffer.from('via config'), 'text/plain');
    expect(reference.startsWith('~store/')).toBe(true);
    expect(() => loadConfig({ DOCUMENT_STORE: 'http' })).toThrow(/DOCUMENT_STORE_URL/);
  });

  describe.each(databaseKinds)('behind the service on %s', (kind) => {
    const api = useTestServer(kind, { DOCUMENT_STORE: 'http', DOCUMENT_STORE_URL: base, DOCUMENT_STORE_TOKEN: 'store-token' });

    it('stores the report in the HTTP store and serves previews from it; the signatures stay in the database', async () => {
      const token = await api.token(64_001 + databaseKinds.indexOf(kind));
      const tour = await newTour(api.db, { accountId: 64_001 + databaseKinds.indexOf(kind) });
      const { delivery } = tour.deliveries[0];
      const response = await api.post(`/deliveries/${delivery.id}/complete`, await completionForm(), { token });
      expect(response.status).toBe(200);
      const rows = await api.db.select().from(attachments).where(eq(attachments.deliveryId, delivery.id));
      expect(rows.map((r) => r.kind).sort()).toEqual(['customer_signature', 'delivery_report', 'driver_signature']);
      const report = rows.find((r) => r.kind === 'delivery_report')!;
      expect(rows.filter((r) => stored.has(r.reference))).toEqual([report]);
      expect(stored.get(report.reference)!.bytes.subarray(0, 5).toString()).toBe('%PDF-');

      const preview = await api.get(`/attachments/${report.id}?w=100&h=80&ext=png`, { token });
      expect(preview.status).toBe(200);
      expect(preview.headers.get('content-type')).toBe('image/png');
      expect(preview.text).toBe('preview 100x80 png p1');
    });
  });
});
