import { eq } from 'drizzle-orm';
import sharp from 'sharp';
import { expect } from 'vitest';
import { completions } from '../../server/db/schema.js';
import { newTour } from './factories.js';
import type { TestServer } from './server.js';
import { blob, completionForm } from './uploads.js';

/** Deliveries of fresh accounts, numbered from firstAccount so that each test file keeps to its own. */
export function attachmentDeliveries(firstAccount: number) {
  let nextAccount = firstAccount;

  async function activeDelivery(api: TestServer) {
    const accountId = nextAccount++;
    const token = await api.token(accountId);
    const tour = await newTour(api.db, { accountId });
    return { token, delivery: tour.deliveries[0].delivery };
  }

  async function completedDelivery(api: TestServer) {
    const { token, delivery } = await activeDelivery(api);
    const response = await api.post(`/deliveries/${delivery.id}/complete`, await completionForm(), { token });
    expect(response.status).toBe(200);
    const [completion] = await api.db.select().from(completions).where(eq(completions.deliveryId, delivery.id));
    return { token, delivery, signatureId: completion.customerSignatureId, reportId: completion.reportAttachmentId! };
  }

  return { activeDelivery, completedDelivery };
}

/** A preview as bytes with what sharp reads from them. */
export async function preview(api: TestServer, token: string, id: string, query = '', headers: Record<string, string> = {}) {
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

export async function noteImageForm(bytes: Buffer | null, field = 'file', type = 'image/png') {
  const form = new FormData();
  if (bytes) form.append(field, blob(bytes, type), 'foto.png');
  return form;
}
