import { randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { attachmentContents, attachments, changeLog, completions, notes } from '../../server/db/schema.js';
import type { DocumentStore } from '../../server/integrations/documents/store.js';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { expectProblem } from '../helpers/problems.js';
import { startTestServer, useTestServer, type TestServer } from '../helpers/server.js';
import { blob, completionForm, rawPng, signaturePng } from '../helpers/uploads.js';
import { inProcess } from '../helpers/target.js';

let nextAccount = 62_000;

async function completedDelivery(api: TestServer) {
  const accountId = nextAccount++;
  const token = await api.token(accountId);
  const tour = await newTour(api.db, { accountId });
  const { delivery } = tour.deliveries[0];
  const response = await api.post(`/deliveries/${delivery.id}/complete`, await completionForm(), { token });
  expect(response.status).toBe(200);
  const [completion] = await api.db.select().from(completions).where(eq(completions.deliveryId, delivery.id));
  return { token, delivery, signatureId: completion.customerSignatureId, reportId: completion.reportAttachmentId! };
}

/** A preview as bytes with what sharp reads from them. */
async function preview(api: TestServer, token: string, id: string, query = '', headers: Record<string, string> = {}) {
  const response = await fetch(`${api.url}/attachments/${id}${query}`, { headers: { authorization: `Bearer ${token}`, ...headers } });
  const bytes = Buffer.from(await response.arrayBuffer());
  const metadata = response.status === 200 ? await sharp(bytes).metadata() : undefined;
  return {
    status: response.status,
    headers: response.headers,
    bytes,
    metadata,
    body: response.status >= 400 ? JSON.parse(bytes.toString()) : undefined,
  };
}

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

async function activeDelivery(api: TestServer) {
  const accountId = nextAccount++;
  const token = await api.token(accountId);
  const tour = await newTour(api.db, { accountId });
  return { token, delivery: tour.deliveries[0].delivery };
}

async function noteImageForm(bytes: Buffer | null, field = 'file', type = 'image/png') {
  const form = new FormData();
  if (bytes) form.append(field, blob(bytes, type), 'foto.png');
  return form;
}

describe.each(databaseKinds)('note image upload on %s', (kind) => {
  const api = useTestServer(kind);

  inProcess.it('stores the image, creates a note with the ~ reference and a note_image attachment, and previews it', async () => {
    const { token, delivery: d } = await activeDelivery(api);
    const image = await sharp({ create: { width: 640, height: 480, channels: 3, background: '#4a90d9' } })
      .jpeg()
      .toBuffer();
    const response = await api.post(`/deliveries/${d.id}/notes/image`, await noteImageForm(image, 'file', 'image/jpeg'), { token });
    expect(response.status).toBe(200);
    const { note } = response.body;
    expect(note).toMatchObject({ deliveryId: d.id, text: null });
    expect(note.imageAttachment).toMatch(/^~/);
    expect(note.imageAttachmentId).toEqual(expect.any(String));

    const [row] = await api.db.select().from(attachments).where(eq(attachments.id, note.imageAttachmentId));
    expect(row).toMatchObject({
      kind: 'note_image',
      noteId: note.id,
      reference: note.imageAttachment,
      contentType: 'image/jpeg',
      sizeBytes: image.length,
    });
    expect((await api.ctx.documents.get(row.reference)).bytes.equals(image)).toBe(true);
    const changes = await api.db
      .select()
      .from(changeLog)
      .where(and(eq(changeLog.entity, 'note'), eq(changeLog.entityId, note.id)));
    expect(changes).toHaveLength(1);

    const shown = await preview(api, token, note.imageAttachmentId, '?w=320');
    expect(shown.metadata).toMatchObject({ width: 320, height: 240 });
  });

  /** The note's uploaded image belongs to no note any more, and the devices were told so. */
  const expectLetGo = async (note: { id: string; imageAttachmentId: string }) => {
    const [row] = await api.db.select().from(attachments).where(eq(attachments.id, note.imageAttachmentId));
    expect(row.noteId).toBeNull();
    const published = await api.db
      .select()
      .from(changeLog)
      .where(and(eq(changeLog.entity, 'attachment'), eq(changeLog.entityId, note.imageAttachmentId)))
      .orderBy(changeLog.seq);
    expect(published.map((c) => (c.data as { noteId: string | null }).noteId)).toEqual([note.id, null]);
  };

  it('keeps the image of a deleted note and tells the feed it belongs to no note any more', async () => {
    const { token, delivery: d } = await activeDelivery(api);
    const image = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } })
      .png()
      .toBuffer();
    const { note } = (await api.post(`/deliveries/${d.id}/notes/image`, await noteImageForm(image), { token })).body;
    expect((await api.delete(`/deliveries/${d.id}/notes/${note.id}`, { token })).status).toBe(204);
    await expectLetGo(note);
  });

  it.each([
    ['removed', { imageAttachment: null, text: 'nur Text' }],
    ['replaced by another reference', { imageAttachment: '~anderes-bild' }],
  ])("lets go of a note's uploaded image when the note's image is %s", async (_what, change) => {
    const { token, delivery: d } = await activeDelivery(api);
    const image = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } })
      .png()
      .toBuffer();
    const { note } = (await api.post(`/deliveries/${d.id}/notes/image`, await noteImageForm(image), { token })).body;
    const changed = await api.patch(`/deliveries/${d.id}/notes/${note.id}`, change, { token });
    expect(changed.status).toBe(200);
    expect(changed.body.note).toMatchObject({ ...change, imageAttachmentId: null });
    await expectLetGo(note);
    // Changing only the text keeps an image the note still shows.
    const kept = (await api.post(`/deliveries/${d.id}/notes/image`, await noteImageForm(image), { token })).body.note;
    const retexted = await api.patch(`/deliveries/${d.id}/notes/${kept.id}`, { text: 'dazu Text' }, { token });
    expect(retexted.body.note.imageAttachmentId).toBe(kept.imageAttachmentId);
  });

  it('answers a resend with the same ids with the same note, once, with its attachment in the change feed', async () => {
    const { token, delivery: d } = await activeDelivery(api);
    const image = await signaturePng();
    const ids = { noteId: randomUUID(), clientEventId: randomUUID() };
    const send = async () => {
      const form = await noteImageForm(image);
      form.append('noteId', ids.noteId);
      form.append('clientEventId', ids.clientEventId);
      form.append('text', 'Paket vor der Tür');
      return api.post(`/deliveries/${d.id}/notes/image`, form, { token });
    };
    const first = await send();
    const again = await send();
    expect(first.status).toBe(200);
    expect(first.body.note).toMatchObject({ id: ids.noteId, text: 'Paket vor der Tür' });
    expect(again.status).toBe(200);
    expect(again.body.note.id).toBe(ids.noteId);
    expect(await api.db.select().from(notes).where(eq(notes.deliveryId, d.id))).toHaveLength(1);
    expect(await api.db.select().from(attachments).where(eq(attachments.noteId, ids.noteId))).toHaveLength(1);
    const attachmentChanges = await api.db
      .select()
      .from(changeLog)
      .where(and(eq(changeLog.entity, 'attachment'), eq(changeLog.entityId, first.body.note.imageAttachmentId)));
    expect(attachmentChanges).toHaveLength(1);
    // Deleted since (on another device, say), the note a further resend made is gone: 200 with none.
    expect((await api.delete(`/deliveries/${d.id}/notes/${ids.noteId}`, { token })).status).toBe(204);
    const late = await send();
    expect([late.status, late.body]).toEqual([200, { note: null }]);
    expect(await api.db.select().from(notes).where(eq(notes.deliveryId, d.id))).toHaveLength(0);
  });

  it('refuses a clientEventId already used for another event with 400 and keeps no note', async () => {
    const { token, delivery: d } = await activeDelivery(api);
    const clientEventId = randomUUID();
    expect(
      (await api.post(`/deliveries/${d.id}/credit`, { clientEventId, action: 'set', amountCents: 1000, reason: 'Bruch' }, { token }))
        .status,
    ).toBe(200);
    const form = await noteImageForm(await signaturePng());
    form.append('clientEventId', clientEventId);
    const response = await api.post(`/deliveries/${d.id}/notes/image`, form, { token });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'validation', errors: [{ path: 'clientEventId' }] });
    expect(await api.db.select().from(notes).where(eq(notes.deliveryId, d.id))).toHaveLength(0);
  });

  it('refuses a note id that is not a uuid with 400', async () => {
    const { token, delivery: d } = await activeDelivery(api);
    const form = await noteImageForm(await signaturePng());
    form.append('noteId', 'note-1');
    expect((await api.post(`/deliveries/${d.id}/notes/image`, form, { token })).status).toBe(400);
  });

  it.each([
    ['no file part', null, 'file'],
    ['an empty file', Buffer.alloc(0), 'file'],
    ['the image under another field name', Buffer.from('x'), 'image'],
    ['a file that is not an image', Buffer.from('just text, no pixels'), 'file'],
    ['an image whose pixel data is broken', rawPng(40, 20, { filter: 7 }), 'file'],
    ['an image with fewer rows than its header says', rawPng(16000, 16000, { rows: 1 }), 'file'],
  ])('refuses %s with 400', async (_what, bytes, field) => {
    const { token, delivery: d } = await activeDelivery(api);
    const response = await api.post(`/deliveries/${d.id}/notes/image`, await noteImageForm(bytes, field), { token });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('validation');
    expect(await api.db.select().from(notes).where(eq(notes.deliveryId, d.id))).toEqual([]);
  });

  it.each([
    ['more than 4096 × 4096 pixels', rawPng(5000, 5000, { rows: 1 })],
    ['more pixels than sharp reads by default (30000 × 30000)', rawPng(30000, 30000, { rows: 1 })],
  ])('refuses an image of %s as too large with 400, not as no image', async (_what, bytes) => {
    const { token, delivery: d } = await activeDelivery(api);
    const response = await api.post(`/deliveries/${d.id}/notes/image`, await noteImageForm(bytes), { token });
    expectProblem(response, 400, 'validation');
    expect(response.body.detail).toBe('The image is too large');
    expect(response.body.errors).toEqual([{ path: 'file', message: expect.stringContaining('at most 16777216 pixels') }]);
    expect(await api.db.select().from(notes).where(eq(notes.deliveryId, d.id))).toEqual([]);
  });

  it('refuses a request without a body as one without a file, with 400', async () => {
    const { token, delivery: d } = await activeDelivery(api);
    const response = await api.post(`/deliveries/${d.id}/notes/image`, undefined, { token });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'validation', errors: [expect.objectContaining({ path: 'file' })] });
  });

  it('refuses a body that is not multipart with 415', async () => {
    const { token, delivery: d } = await activeDelivery(api);
    const response = await api.post(`/deliveries/${d.id}/notes/image`, { file: 'x' }, { token });
    expect(response.status).toBe(415);
    expect(response.body.code).toBe('unsupported_media_type');
  });

  it('answers 404 for an unknown delivery and for a delivery of another account', async () => {
    const { delivery: d } = await activeDelivery(api);
    const other = await activeDelivery(api);
    const form = async () => noteImageForm(await signaturePng());
    expect((await api.post(`/deliveries/${d.id}/notes/image`, await form(), { token: other.token })).status).toBe(404);
    expect((await api.post(`/deliveries/${randomUUID()}/notes/image`, await form(), { token: other.token })).status).toBe(404);
    expect((await api.post('/deliveries/nope/notes/image', await form(), { token: other.token })).status).toBe(400);
  });
});

inProcess.describe.each(databaseKinds)('a failing document store on %s', (kind) => {
  const diskFull = async (): Promise<string> => {
    throw new Error('disk full');
  };
  let upload = diskFull;
  const failing: DocumentStore = {
    put: () => upload(),
    async get() {
      throw new Error('disk full');
    },
  };
  let api: TestServer;
  beforeAll(async () => {
    api = await startTestServer(kind, {}, { documents: failing });
  });
  afterEach(() => {
    upload = diskFull;
  });
  afterAll(() => api.close());

  it.each([
    ['failing', diskFull],
    ['answering a reference the database reserves', async () => `~db/${randomUUID()}`],
  ])('answers a note image upload to a store %s with 500 and a problem body, creating no note', async (_what, answer) => {
    upload = answer;
    const { token, delivery: d } = await activeDelivery(api);
    const response = await api.post(`/deliveries/${d.id}/notes/image`, await noteImageForm(await signaturePng()), { token });
    expect(response.status).toBe(500);
    expect(response.headers.get('content-type')).toContain('application/problem+json');
    expect(response.body).toMatchObject({ status: 500, code: 'internal' });
    expect(response.text).not.toContain('disk full');
    expect(await api.db.select().from(notes).where(eq(notes.deliveryId, d.id))).toEqual([]);
    expect(await api.db.select().from(attachments).where(eq(attachments.deliveryId, d.id))).toEqual([]);
  });

  it('completes without it: the signatures are kept in the database and previewed from there, the report waits', async () => {
    const { token, delivery: d } = await activeDelivery(api);
    const customer = await signaturePng(320, 140);
    const response = await api.post(`/deliveries/${d.id}/complete`, await completionForm({ customer }), { token });
    expect(response.status).toBe(200);
    expect(response.body.delivery.state).toBe('completed');
    const [completion] = await api.db.select().from(completions).where(eq(completions.deliveryId, d.id));
    expect(completion.reportAttachmentId).toBeNull();
    const [kept] = await api.db
      .select()
      .from(attachmentContents)
      .where(eq(attachmentContents.attachmentId, completion.customerSignatureId));
    expect(kept.bytes.equals(customer)).toBe(true);
    const shown = await preview(api, token, completion.customerSignatureId, '?w=0&h=0&ext=png');
    expect(shown).toMatchObject({ status: 200, metadata: { format: 'png', width: 320, height: 140 } });
  });
});
