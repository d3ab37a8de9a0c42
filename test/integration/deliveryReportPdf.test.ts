import { describe, expect, it } from 'vitest';
import { renderDeliveryReport, type DeliveryReportData } from '../../server/integrations/report/deliveryReport.js';
import { sampleAddress } from '../helpers/factories.js';
import { rawPng, signaturePng } from '../helpers/uploads.js';
import { readPdf } from '../helpers/readPdf.js';

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
