import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accounts, attachments, completions, customers, deliveries } from '../../server/db/schema.js';
import { createLocalDocumentStore } from '../../server/integrations/documents/local.js';
import type { DocumentStore } from '../../server/integrations/documents/store.js';
import { renderDeliveryReport, type DeliveryReportData } from '../../server/integrations/report/deliveryReport.js';
import { followUpCompletion } from '../../server/engine/completion/followUp.js';
import { databaseKinds } from '../helpers/databases.js';
import { newTour, sampleAddress } from '../helpers/factories.js';
import { startTestServer, useTestServer, type TestServer } from '../helpers/server.js';
import { copy, delivery as erpDelivery, position, tourPayload } from '../helpers/tourPayloads.js';
import { completionForm, rawPng, signaturePng } from '../helpers/uploads.js';
import { inProcess } from '../helpers/target.js';

/** The text of every page and the number of images drawn, read back with mupdf. */
async function readPdf(pdf: Buffer) {
  const mupdf = await import('mupdf');
  const document = mupdf.Document.openDocument(pdf, 'application/pdf');
  const pages: string[] = [];
  let images = 0;
  for (let i = 0; i < document.countPages(); i++) {
    const text = document.loadPage(i).toStructuredText('preserve-whitespace,preserve-images');
    pages.push(text.asText());
    text.walk({
      onImageBlock: () => {
        images += 1;
      },
    });
  }
  const title = document.getMetaData('info:Title');
  document.destroy();
  // Lines are joined so that a value wrapped in a table cell still reads as one phrase.
  return { pages, text: pages.join('\n').replace(/\s+/g, ' '), images, title };
}

async function sampleData(overrides: Partial<DeliveryReportData> = {}): Promise<DeliveryReportData> {
  return {
    companyName: 'Getränke Nord GmbH',
    belegnummer: 'LS-2026-004711',
    belegartId: 1,
    tourDate: '2026-07-01',
    tourName: 'Tour Nord',
    completedAt: new Date('2026-07-01T10:05:00Z'),
    customer: { name: 'Bäckerei Sonnenschein GmbH', erpCustomerId: 100234, address: sampleAddress('Marktplatz') },
    deliveryAddress: { ...sampleAddress('Lieferweg'), addition: 'Hinterhof' },
    driver: { name: 'Max Müller', personalnummer: 1001 },
    carPlate: 'B-TL 100',
    positions: [
      {
        lineNumber: 10,
        articleNumber: 'A-100',
        articleName: 'Mineralwasser 12 x 1 l',
        unit: 'Kst',
        ordered: 5,
        delivered: 3,
        credited: 2,
        removed: 0,
        state: 'Done',
        scannable: true,
      },
      {
        lineNumber: 20,
        articleNumber: 'A-200',
        articleName: 'Apfelschorle 24 x 0,33 l',
        unit: 'Kst',
        ordered: 4,
        delivered: 0,
        credited: 0,
        removed: 4,
        state: 'Removed',
        scannable: true,
      },
      {
        lineNumber: 30,
        articleNumber: 'F-1',
        articleName: 'Lieferpauschale',
        unit: null,
        ordered: 1,
        delivered: 1,
        credited: 0,
        removed: 0,
        state: 'InProgress',
        scannable: false,
      },
    ],
    credit: { amountCents: 2000, reason: 'Verspätete Lieferung' },
    payment: {
      methodName: 'Barzahlung',
      methodCode: 'BAR',
      paymentTerm: 'sofort',
      erpOpenAmountCents: 12345,
      openAmountCents: 10345,
      collectedAmountCents: 10345,
      loggedAt: new Date('2026-07-01T10:00:00Z'),
    },
    serviceValues: [
      { name: 'Leergut zurückgenommen', value: 'Ja' },
      { name: 'Paletten getauscht', value: '2' },
    ],
    notes: [{ text: 'Bitte Hintereingang benutzen', hasImage: false, createdAt: new Date('2026-06-30T08:00:00Z') }],
    internalNote: {
      text: 'Hund im Hof, vorher klingeln',
      at: new Date('2026-07-01T10:05:00Z'),
      driver: 'Max Müller',
      carPlate: 'B-TL 100',
    },
    signatures: { customer: await signaturePng(), driver: await signaturePng(300, 100, 'M10 50 L 290 50') },
    ...overrides,
  };
}

describe('delivery report PDF', () => {
  it('shows header, document number, addresses, tour date, driver and car', async () => {
    const { text, title } = await readPdf(await renderDeliveryReport(await sampleData()));
    for (const expected of [
      'Getränke Nord GmbH',
      'Lieferschein / Lieferbericht',
      'LS-2026-004711',
      'Bäckerei Sonnenschein GmbH',
      'Kunden-Nr. 100234',
      'Marktplatz 12a',
      'Lieferweg 12a',
      'Hinterhof',
      '10115 Berlin',
      '01.07.2026',
      'Max Müller (Pers.-Nr. 1001)',
      'B-TL 100',
    ])
      expect(text).toContain(expected);
    expect(title).toBe('Lieferbericht LS-2026-004711');
  });

  it('lists every position with ordered, delivered, credited and removed quantities', async () => {
    const { text } = await readPdf(await renderDeliveryReport(await sampleData()));
    expect(text).toMatch(/10 A-100 Mineralwasser 12 x 1 l 5 Kst 3 Kst 2 Kst – geliefert/);
    // A charge without scans counts as delivered, not as open.
    expect(text).toMatch(/30 F-1 Lieferpauschale \(Leistung\) 1 1 – – geliefert/);
    expect(text).toMatch(/20 A-200 Apfelschorle 24 x 0,33 l 4 Kst 0 Kst – 4 Kst entfernt/);
    expect(text).toContain('Lieferpauschale (Leistung)');
  });

  it('shows money credit with reason, payment, service values, notes and the internal note with time and driver', async () => {
    const { text } = await readPdf(await renderDeliveryReport(await sampleData()));
    expect(text).toContain('Betrags-Gutschrift: 20,00 € – Grund: Verspätete Lieferung');
    expect(text).toContain('Zahlungsart: Barzahlung (BAR)');
    expect(text).toContain('Kassiert: 103,45 € am 01.07.2026, 12:00 Uhr');
    expect(text).toContain('Zahlungsbedingung: sofort');
    expect(text).toContain('Leergut zurückgenommen: Ja');
    expect(text).toContain('Paletten getauscht: 2');
    expect(text).toContain('Bitte Hintereingang benutzen');
    expect(text).toContain('Interne Notiz des Fahrers');
    expect(text).toContain('01.07.2026, 12:05 Uhr · Max Müller · Fahrzeug B-TL 100');
    expect(text).toContain('Hund im Hof, vorher klingeln');
  });

  it('writes names and notes in any European script as they were entered', async () => {
    const { text } = await readPdf(
      await renderDeliveryReport(
        await sampleData({
          customer: { name: 'Łukasz Żółć Spółka z o.o.', erpCustomerId: 4711, address: { ...sampleAddress('Łąkowa'), city: 'Gdańsk' } },
          driver: { name: 'Ömer Çelik', personalnummer: 1001 },
          notes: [
            {
              text: 'proszę dzwonić – Łukasz; Спасибо; Çok teşekkürler; Ελλάδα',
              hasImage: false,
              createdAt: new Date('2026-06-30T08:00:00Z'),
            },
          ],
          internalNote: {
            text: 'Klient prosił o dostawę przez bramę',
            at: new Date('2026-07-01T10:05:00Z'),
            driver: 'Ömer Çelik',
            carPlate: null,
          },
        }),
      ),
    );
    for (const expected of [
      'Łukasz Żółć Spółka z o.o.',
      'Łąkowa',
      'Gdańsk',
      'Ömer Çelik',
      'proszę dzwonić – Łukasz; Спасибо; Çok teşekkürler; Ελλάδα',
      'Klient prosił o dostawę przez bramę',
    ]) {
      expect(text).toContain(expected);
    }
  });

  it('moves the next header line below a tour name that wraps, and keeps long text off the footer', async () => {
    const pdf = await renderDeliveryReport(
      await sampleData({
        tourName: 'Tour Berlin Mitte und Umland Nord-Ost mit Nachlieferung',
        internalNote: {
          text: 'Sehr lange Notiz. '.repeat(400),
          at: new Date('2026-07-01T10:05:00Z'),
          driver: 'Max Müller',
          carPlate: null,
        },
      }),
    );
    const mupdf = await import('mupdf');
    const document = mupdf.Document.openDocument(pdf, 'application/pdf');
    // Every line of text with its box: nothing may overlap another line, the footer included.
    for (let i = 0; i < document.countPages(); i++) {
      const lines: { text: string; y0: number; y1: number; x0: number; x1: number }[] = [];
      let current: (typeof lines)[number] | undefined;
      document
        .loadPage(i)
        .toStructuredText('preserve-whitespace')
        .walk({
          beginLine: (bbox: number[]) => {
            current = { text: '', x0: bbox[0], y0: bbox[1], x1: bbox[2], y1: bbox[3] };
          },
          onChar: (c: string) => {
            current!.text += c;
          },
          endLine: () => {
            lines.push(current!);
          },
        });
      for (const a of lines) {
        for (const b of lines) {
          if (a === b) continue;
          const overlap = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0) > 1 && Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0) > 1;
          expect(overlap, `"${a.text}" overlaps "${b.text}" on page ${i + 1}`).toBe(false);
        }
      }
    }
    document.destroy();
  });

  it('writes timestamps in Berlin time, in summer and in winter', async () => {
    const winter = await readPdf(
      await renderDeliveryReport(await sampleData({ completedAt: new Date('2026-01-15T23:30:00Z'), internalNote: null })),
    );
    expect(winter.text).toContain('16.01.2026, 00:30 Uhr');
    const summer = await readPdf(await renderDeliveryReport(await sampleData({ completedAt: new Date('2026-07-01T22:30:00Z') })));
    expect(summer.text).toContain('02.07.2026, 00:30 Uhr');
  });

  it('draws both signatures as images', async () => {
    const { images, text } = await readPdf(await renderDeliveryReport(await sampleData()));
    expect(images).toBe(2);
    expect(text).toContain('Unterschrift Kunde');
    expect(text).toContain('Unterschrift Fahrer');
  });

  it('says so for a stored signature it cannot read, instead of failing the report', async () => {
    const data = await sampleData();
    const { images, text } = await readPdf(
      await renderDeliveryReport({ ...data, signatures: { ...data.signatures, customer: rawPng(40, 20, { filter: 7 }) } }),
    );
    expect(images).toBe(1);
    expect(text).toContain('(Bild nicht lesbar)');
  });

  it('leaves out the internal note section when there is none and says so for empty lists', async () => {
    const { text } = await readPdf(
      await renderDeliveryReport(await sampleData({ internalNote: null, credit: null, serviceValues: [], notes: [] })),
    );
    expect(text).not.toContain('Interne Notiz');
    expect(text).toContain('Betrags-Gutschrift: keine');
    expect(text).toMatch(/Leistungen keine erfasst/);
  });

  it('continues a long position list on further pages, numbering every page', async () => {
    const positions = Array.from({ length: 80 }, (_, i) => ({
      lineNumber: i + 1,
      articleNumber: `A-${i}`,
      articleName: `Artikel ${i}`,
      unit: 'Stk',
      ordered: 1,
      delivered: 1,
      credited: 0,
      removed: 0,
      state: 'Done',
      scannable: true,
    }));
    const { pages, text } = await readPdf(await renderDeliveryReport(await sampleData({ positions })));
    expect(pages.length).toBeGreaterThan(2);
    expect(text).toContain(`Seite 1 von ${pages.length}`);
    expect(text).toContain(`Seite ${pages.length} von ${pages.length}`);
    expect(text).toContain('80 A-79 Artikel 79');
  });
});

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
