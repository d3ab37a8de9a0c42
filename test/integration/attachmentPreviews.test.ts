import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { useTestServer } from '../helpers/server.js';
import { inProcess } from '../helpers/target.js';
import { attachmentDeliveries, preview } from '../helpers/attachmentDeliveries.js';

const { completedDelivery } = attachmentDeliveries(62_000);

describe.each(databaseKinds)('attachment previews on %s', (kind) => {
  const api = useTestServer(kind);
  let token: string;
  let signatureId: string;
  let reportId: string;
  beforeAll(async () => {
    ({ token, signatureId, reportId } = await completedDelivery(api));
  });

  it('renders a jpeg of at most 1024 x 1024 at quality 85 by default, never enlarging a 400 x 150 signature', async () => {
    const result = await preview(api, token, signatureId);
    expect(result.status).toBe(200);
    expect(result.headers.get('content-type')).toBe('image/jpeg');
    expect(result.metadata).toMatchObject({ format: 'jpeg', width: 400, height: 150 });
    const explicit = await preview(api, token, signatureId, '?w=1024&h=1024&q=85&ext=jpeg&page=1');
    expect(explicit.bytes.equals(result.bytes)).toBe(true);
    expect(explicit.headers.get('etag')).toBe(result.headers.get('etag'));
  });

  it.each([
    ['png', 'image/png', 'png'],
    ['jpeg', 'image/jpeg', 'jpeg'],
    ['jpg', 'image/jpeg', 'jpeg'],
    ['webp', 'image/webp', 'webp'],
    ['tiff', 'image/tiff', 'tiff'],
  ])('renders ext=%s as %s', async (ext, contentType, format) => {
    const result = await preview(api, token, signatureId, `?ext=${ext}`);
    expect(result.headers.get('content-type')).toBe(contentType);
    expect(result.metadata!.format).toBe(format);
  });

  it.each([
    ['w=200', 200, 75],
    ['h=30', 80, 30],
    ['w=100&h=100', 100, 38],
    ['w=0&h=0', 400, 150],
    ['w=0&h=50', 133, 50],
    ['w=120&h=0', 120, 45],
    ['w=5000&h=5000', 400, 150],
    ['w=2147483647&h=2147483647', 400, 150],
  ])('fits inside the box with %s, keeping the aspect ratio and never enlarging (%i x %i)', async (query, width, height) => {
    const result = await preview(api, token, signatureId, `?${query}&ext=png`);
    expect(result.status).toBe(200);
    expect(result.metadata).toMatchObject({ width, height });
  });

  it('accepts quality 0 and 100, and a lower quality gives a smaller file', async () => {
    const sizes = [];
    for (const q of [0, 50, 100]) {
      const result = await preview(api, token, reportId, `?q=${q}&w=600&h=600`);
      expect(result.status).toBe(200);
      sizes.push(result.bytes.length);
    }
    expect(sizes[0]).toBeLessThan(sizes[1]);
    expect(sizes[1]).toBeLessThan(sizes[2]);
  });

  it.each([
    'w=-1',
    'w=abc',
    'w=1.5',
    'w=',
    'w=2147483648',
    'h=-5',
    'h=1e3',
    'q=101',
    'q=-1',
    'q=8.5',
    'ext=gif',
    'ext=JPEG',
    'ext=',
    'page=0',
    'page=-1',
    'page=abc',
    'page=1.5',
    'w=10&w=20',
  ])('refuses %s with 400', async (query) => {
    const result = await preview(api, token, signatureId, `?${query}`);
    expect(result.status).toBe(400);
    expect(result.headers.get('content-type')).toContain('application/problem+json');
    expect(result.body.code).toBe('validation');
  });

  it('renders page 1 of the delivery report as an A4 image within the box', async () => {
    const result = await preview(api, token, reportId, '?ext=png');
    expect(result.status).toBe(200);
    expect(result.metadata!.height).toBe(1024);
    expect(result.metadata!.width).toBeGreaterThan(715);
    expect(result.metadata!.width).toBeLessThan(730);
    const small = await preview(api, token, reportId, '?w=100&page=1');
    expect(small.metadata!.width).toBe(100);
  });

  it('renders a PDF page at most at its full resolution (200 dpi) however large the box', async () => {
    const result = await preview(api, token, reportId, '?w=0&h=0&ext=png');
    expect(result.metadata).toMatchObject({ width: 1654, height: 2339 });
    const huge = await preview(api, token, reportId, '?w=100000&h=100000&ext=png');
    expect(huge.metadata).toMatchObject({ width: 1654, height: 2339 });
  });

  inProcess.it('answers a page beyond the document with 404', async () => {
    const result = await preview(api, token, reportId, '?page=99');
    expect(result.status).toBe(404);
    expect(result.body).toMatchObject({ code: 'not_found', errors: [{ path: 'query.page' }] });
    // Not cached, and not turned into a 304 by the ETag of a preview that does not exist.
    expect(result.headers.get('cache-control') ?? '').not.toContain('max-age');
    expect(result.headers.get('etag')).not.toBe(
      api.ctx.previews.etag(reportId, { width: 1024, height: 1024, quality: 85, format: 'jpeg', page: 99 }),
    );
    expect((await preview(api, token, signatureId, '?page=2')).status).toBe(404);
  });

  it('sends an ETag over the attachment and the parameters and answers If-None-Match with 304', async () => {
    const first = await preview(api, token, signatureId, '?w=300');
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^".+"$/);
    expect((await preview(api, token, signatureId, '?w=301')).headers.get('etag')).not.toBe(etag);
    expect((await preview(api, token, reportId, '?w=300')).headers.get('etag')).not.toBe(etag);
    expect((await preview(api, token, signatureId, '?w=300&ext=jpg')).headers.get('etag')).toBe(etag);

    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const cached = await preview(api, token, signatureId, '?w=300', { 'if-none-match': ifNoneMatch });
      expect(cached.status).toBe(304);
      expect(cached.bytes.length).toBe(0);
    }
    expect((await preview(api, token, signatureId, '?w=300', { 'if-none-match': '"other"' })).status).toBe(200);
  });

  inProcess.it('serves a repeated preview from the cache without rendering it again', async () => {
    const query = `?w=${200 + Math.floor(Math.random() * 100)}&ext=webp`;
    const first = await preview(api, token, reportId, query);
    const renders = api.ctx.previews.renders;
    const again = await preview(api, token, reportId, query);
    expect(again.bytes.equals(first.bytes)).toBe(true);
    expect(api.ctx.previews.renders).toBe(renders);
  });

  it('answers 404 for an attachment of another account and for an unknown one, 400 for an invalid id, 401 without token', async () => {
    const other = await completedDelivery(api);
    const foreign = await preview(api, token, other.signatureId);
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('not_found');
    expect((await preview(api, token, randomUUID())).status).toBe(404);
    expect((await preview(api, token, 'nope')).status).toBe(400);
    expect((await fetch(`${api.url}/attachments/${signatureId}`)).status).toBe(401);
    // A 304 is no way around the scope either.
    const etag = (await preview(api, other.token, other.signatureId)).headers.get('etag')!;
    expect((await preview(api, token, other.signatureId, '', { 'if-none-match': etag })).status).toBe(404);
  });
});
