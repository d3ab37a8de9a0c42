import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { accounts, attachments, completions, customers, deliveries } from '../../server/db/schema.js';
import { createLocalDocumentStore } from '../../server/integrations/documents/local.js';
import type { DocumentStore } from '../../server/integrations/documents/store.js';
import { followUpCompletion } from '../../server/engine/completion/followUp.js';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { startTestServer, useTestServer, type TestServer } from '../helpers/server.js';
import { copy, delivery as erpDelivery, position, tourPayload } from '../helpers/tourPayloads.js';
import { completionForm } from '../helpers/uploads.js';
import { inProcess } from '../helpers/target.js';
import { readPdf } from '../helpers/readPdf.js';

inProcess.describe.each(databaseKinds)('the report of a completion on %s', (kind) => {
  const api = useTestServer(kind, { COMPANY_NAME: 'Frischdienst Süd GmbH' });

  it('is stored after the completion with what happened on the delivery', async () => {
    const accountId = 63_000 + databaseKinds.indexOf(kind);
    const token = await api.token(accountId);
    const tour = await newTour(api.db, {
      accountId,
      openAmountCents: 5000,
      customerName: 'Café Morgenrot',
      positions: [
        { scannable: true, quantity: 4, unitPriceCents: 500, articleName: 'Milch 1 l' },
        { scannable: true, quantity: 2, state: 'Removed', scannedQuantity: 0, unitPriceCents: 300, articleName: 'Sahne' },
      ],
    });
    const { delivery } = tour.deliveries[0];
    const car = (await api.post('/me/cars', { plate: `B-R ${randomUUID().slice(0, 4)}` }, { token })).body.car;
    const method = (
      await api.post('/payment-methods', { code: `BAR-${randomUUID().slice(0, 6)}`, name: 'Barzahlung', collectOnSite: true }, { token })
    ).body.paymentMethod;
    const service = (
      await api.post(
        '/services',
        { key: `pal-${randomUUID().slice(0, 6)}`, name: 'Paletten getauscht', kind: 'numeric', minValue: 0, maxValue: 10 },
        { token },
      )
    ).body.service;
    await api.db.update(deliveries).set({ paymentMethodId: method.id }).where(eq(deliveries.id, delivery.id));
    expect((await api.put(`/deliveries/${delivery.id}/services/${service.id}`, { numericValue: 3 }, { token })).status).toBe(200);
    expect(
      (
        await api.post(
          `/deliveries/${delivery.id}/credit`,
          { clientEventId: randomUUID(), action: 'set', amountCents: 1000, reason: 'Kühlkette unterbrochen' },
          { token },
        )
      ).status,
    ).toBe(200);
    expect((await api.post(`/deliveries/${delivery.id}/notes`, { text: 'Ware im Kühlraum abstellen' }, { token })).status).toBe(200);

    const response = await api.post(
      `/deliveries/${delivery.id}/complete`,
      await completionForm({
        acknowledgements: {
          receiptConfirmed: true,
          notesAcknowledged: true,
          paymentCollected: true,
          authorCarId: car.id,
          internalNote: 'Kunde zahlt künftig per Rechnung',
        },
      }),
      { token },
    );
    expect(response.status).toBe(200);

    const [completion] = await api.db.select().from(completions).where(eq(completions.deliveryId, delivery.id));
    const [report] = await api.db.select().from(attachments).where(eq(attachments.id, completion.reportAttachmentId!));
    expect(report).toMatchObject({ kind: 'delivery_report', contentType: 'application/pdf' });
    const stored = await api.ctx.documents.get(report.reference);
    expect(stored.contentType).toBe('application/pdf');
    expect(report.sizeBytes).toBe(stored.bytes.length);

    const { text, images } = await readPdf(stored.bytes);
    for (const expected of [
      'Frischdienst Süd GmbH',
      delivery.belegnummer,
      'Café Morgenrot',
      `Fahrer ${accountId}`,
      car.plate,
      'Milch 1 l',
      'Sahne',
      'Kühlkette unterbrochen',
      'Barzahlung',
      'Kassiert: 34,00 €',
      'Paletten getauscht: 3',
      'Ware im Kühlraum abstellen',
      'Interne Notiz des Fahrers',
      'Kunde zahlt künftig per Rechnung',
    ])
      expect(text).toContain(expected);
    expect(images).toBe(2);
  });
});

inProcess.describe.each(databaseKinds)('a report stored after the document store was down on %s', (kind) => {
  // A local store that refuses every upload while `down`, as a full disk or an unreachable HTTP store would.
  const local = createLocalDocumentStore(undefined);
  let down = false;
  const store: DocumentStore = {
    put: (...args) => (down ? Promise.reject(new Error('document store unavailable')) : local.put(...args)),
    get: (reference) => local.get(reference),
    close: () => local.close!(),
  };
  let api: TestServer;
  beforeAll(async () => {
    api = await startTestServer(kind, {}, { documents: store });
  });
  afterAll(() => api.close());

  /** A tour synced as the ERP sends it, its one delivery completed while the store is down. */
  async function completedWhileStoreDown(accountId: number) {
    const token = await api.token(accountId);
    // Only a charge line, so that no scans are needed; nothing open, so no payment either.
    const payload = {
      ...tourPayload(accountId, { deliveries: 0 }),
      deliveries: [erpDelivery({ openAmountCents: 0, positions: [position(30)] })],
    };
    const synced = await api.post('/sync/tour', payload, { token });
    expect(synced.status).toBe(200);
    const [delivery] = await api.db.select().from(deliveries).where(eq(deliveries.tourId, synced.body.tour.id));
    expect((await api.post(`/deliveries/${delivery.id}/notes`, { text: 'Vor Abschluss notiert' }, { token })).status).toBe(200);
    down = true;
    const response = await api.post(
      `/deliveries/${delivery.id}/complete`,
      await completionForm({ acknowledgements: { receiptConfirmed: true, notesAcknowledged: true } }),
      { token },
    );
    expect(response.status).toBe(200);
    expect((await completionOf(delivery.id)).reportAttachmentId).toBeNull();
    return { token, payload, delivery };
  }

  const completionOf = async (deliveryId: string) =>
    (await api.db.select().from(completions).where(eq(completions.deliveryId, deliveryId)))[0];

  /** The store is back: the retry job's follow-up stores the report; its text. */
  async function reportOnceStoreIsBack(deliveryId: string) {
    down = false;
    await followUpCompletion(api.ctx, deliveryId);
    const { reportAttachmentId } = await completionOf(deliveryId);
    expect(reportAttachmentId).not.toBeNull();
    const [report] = await api.db.select().from(attachments).where(eq(attachments.id, reportAttachmentId!));
    return (await readPdf((await api.ctx.documents.get(report.reference)).bytes)).text;
  }

  it('shows what the customer signed, not a note or a customer name that came after the completion', async () => {
    const accountId = 64_000 + databaseKinds.indexOf(kind);
    const { token, payload, delivery } = await completedWhileStoreDown(accountId);
    const signedName = payload.deliveries[0].customer.name;

    expect((await api.post(`/deliveries/${delivery.id}/notes`, { text: 'NACH Abschluss geschrieben' }, { token })).status).toBe(200);
    const renamed = copy(payload);
    renamed.driver.name = 'Umbenannter Fahrer';
    renamed.deliveries[0].customer.name = 'Umbenannt nach Abschluss GmbH';
    // Renaming an account is the ERP connector's job: the admin key.
    expect((await api.post('/sync/tour', renamed, { admin: true })).status).toBe(200);
    // The changes are real: the data as it is now carries them.
    const [now] = await api.db
      .select({ customer: customers.name, driver: accounts.name })
      .from(deliveries)
      .innerJoin(customers, eq(customers.id, deliveries.customerId))
      .innerJoin(accounts, eq(accounts.personalnummer, accountId))
      .where(eq(deliveries.id, delivery.id));
    expect(now).toEqual({ customer: 'Umbenannt nach Abschluss GmbH', driver: 'Umbenannter Fahrer' });

    const text = await reportOnceStoreIsBack(delivery.id);
    expect(text).toContain(signedName);
    expect(text).toContain(`Fahrer ${accountId}`);
    expect(text).toContain('Vor Abschluss notiert');
    expect(text).not.toContain('Umbenannt nach Abschluss GmbH');
    expect(text).not.toContain('Umbenannter Fahrer');
    expect(text).not.toContain('NACH Abschluss geschrieben');
  });

  it('still stores the report of a completion made before the report was kept with it, from the data as it is now', async () => {
    const accountId = 64_100 + databaseKinds.indexOf(kind);
    const { payload, delivery } = await completedWhileStoreDown(accountId);
    await api.db.update(completions).set({ reportSource: null }).where(eq(completions.deliveryId, delivery.id));

    const text = await reportOnceStoreIsBack(delivery.id);
    for (const expected of [
      delivery.belegnummer,
      payload.deliveries[0].customer.name,
      `Fahrer ${accountId}`,
      'Frachtpauschale',
      'Vor Abschluss notiert',
    ]) {
      expect(text).toContain(expected);
    }
  });
});
