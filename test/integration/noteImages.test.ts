import { randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { attachments, changeLog, notes } from '../../server/db/schema.js';
import { databaseKinds } from '../helpers/databases.js';
import { expectProblem } from '../helpers/problems.js';
import { useTestServer } from '../helpers/server.js';
import { rawPng, signaturePng } from '../helpers/uploads.js';
import { inProcess } from '../helpers/target.js';
import { attachmentDeliveries, noteImageForm, preview } from '../helpers/attachmentDeliveries.js';

const { activeDelivery } = attachmentDeliveries(63_000);

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
