import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { attachmentContents, attachments, completions, notes } from '../../server/db/schema.js';
import type { DocumentStore } from '../../server/integrations/documents/store.js';
import { databaseKinds } from '../helpers/databases.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { completionForm, signaturePng } from '../helpers/uploads.js';
import { inProcess } from '../helpers/target.js';
import { attachmentDeliveries, noteImageForm, preview } from '../helpers/attachmentDeliveries.js';

const { activeDelivery } = attachmentDeliveries(64_000);

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
