import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Address } from '../../../shared/schemas/common.js';
import { plainPng } from '../images.js';

export interface ReportPosition {
  lineNumber: number;
  articleNumber: string;
  articleName: string;
  unit: string | null;
  ordered: number;
  delivered: number;
  credited: number;
  removed: number;
  state: string;
  scannable: boolean;
}

export interface DeliveryReportData {
  companyName: string;
  belegnummer: string;
  belegartId: number;
  tourDate: string;
  tourName: string | null;
  completedAt: Date;
  customer: { name: string; erpCustomerId: number; address: Address };
  deliveryAddress: Address;
  driver: { name: string; personalnummer: number };
  carPlate: string | null;
  positions: ReportPosition[];
  credit: { amountCents: number; reason: string } | null;
  payment: {
    methodName: string | null;
    methodCode: string | null;
    paymentTerm: string | null;
    erpOpenAmountCents: number;
    openAmountCents: number;
    collectedAmountCents: number;
    /** When a payment was logged through the payment protocol. */
    loggedAt: Date | null;
  };
  serviceValues: { name: string; value: string }[];
  notes: { text: string | null; hasImage: boolean; createdAt: Date }[];
  internalNote: { text: string; at: Date; driver: string; carPlate: string | null } | null;
  signatures: { customer: Buffer; driver: Buffer };
}

const berlin = new Intl.DateTimeFormat('de-DE', {
  timeZone: 'Europe/Berlin',
  day: '2-digit',
  month: '2-digit',
  year: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
});
const euro = new Intl.NumberFormat('de-DE', { style: 'currency', currency: 'EUR' });

export const formatBerlin = (instant: Date) => `${berlin.format(instant)} Uhr`;
export const formatEuro = (cents: number) => euro.format(cents / 100);
const formatDate = (isoDate: string) => isoDate.split('-').reverse().join('.');
const addressLines = (a: Address) => [
  `${a.street} ${a.houseNumber}`.trim(),
  ...(a.addition ? [a.addition] : []),
  `${a.postalCode} ${a.city}`.trim(),
  ...(a.country && a.country !== 'DE' ? [a.country] : []),
];
const stateLabel: Record<string, string> = { Done: 'geliefert', Removed: 'entfernt', InProgress: 'offen', Held: 'zurückgehalten' };

/**
 * DejaVu Sans, embedded: PDF's standard fonts know only Windows-1252, so a Polish, Turkish or
 * Cyrillic name or note would come out garbled. The condensed cut sets about as wide as the
 * standard sans serif did.
 */
function readFonts() {
  const require = createRequire(import.meta.url);
  const file = (name: string) => readFileSync(require.resolve(`dejavu-fonts-ttf/ttf/${name}`));
  return { regular: file('DejaVuSansCondensed.ttf'), bold: file('DejaVuSansCondensed-Bold.ttf') };
}
/** Read on first use, like pdfkit is loaded (the test server package goes without both). */
let fonts: { regular: Buffer; bold: Buffer } | undefined;
const REGULAR = 'Regular';
const BOLD = 'Bold';

const PAGE_MARGIN = 50;
/** Room kept free at the foot of every page for the footer line. */
const FOOTER_SPACE = 30;
const INK = '#1f2933';
const MUTED = '#616e7c';
const RULE = '#cbd2d9';
const ACCENT = '#0b4f8a';

/** Renders the delivery report (Lieferschein / Lieferbericht) of a completed delivery as a PDF. */
export async function renderDeliveryReport(data: DeliveryReportData): Promise<Buffer> {
  // Loaded on first use, like sharp: only completions need it, and loading it slows every start.
  const { default: PDFDocument } = await import('pdfkit');
  const [customerSignature, driverSignature] = await Promise.all([plainPng(data.signatures.customer), plainPng(data.signatures.driver)]);
  fonts ??= readFonts();
  const doc = new PDFDocument({
    size: 'A4',
    margins: { top: PAGE_MARGIN, left: PAGE_MARGIN, right: PAGE_MARGIN, bottom: PAGE_MARGIN + FOOTER_SPACE },
    bufferPages: true,
    info: { Title: `Lieferbericht ${data.belegnummer}`, Author: data.companyName, Subject: `Lieferschein ${data.belegnummer}` },
  });
  doc.registerFont(REGULAR, fonts.regular);
  doc.registerFont(BOLD, fonts.bold);
  const chunks: Buffer[] = [];
  doc.on('data', (chunk: Buffer) => chunks.push(chunk));
  const finished = new Promise<Buffer>((resolve, reject) => {
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });

  const left = PAGE_MARGIN;
  const width = doc.page.width - 2 * PAGE_MARGIN;
  const bottom = () => doc.page.height - PAGE_MARGIN - FOOTER_SPACE;
  const ensureSpace = (height: number) => {
    if (doc.y + height > bottom()) doc.addPage();
  };
  const rule = (y = doc.y) =>
    doc
      .moveTo(left, y)
      .lineTo(left + width, y)
      .lineWidth(0.7)
      .strokeColor(RULE)
      .stroke();
  const section = (title: string, minSpace = 60) => {
    ensureSpace(minSpace);
    doc.moveDown(0.9);
    doc.font(BOLD).fontSize(11).fillColor(ACCENT).text(title, left, doc.y, { width });
    rule(doc.y + 2);
    doc.moveDown(0.5);
    doc.font(REGULAR).fontSize(9.5).fillColor(INK);
  };
  const field = (label: string, value: string) => {
    doc.font(BOLD).fontSize(9.5).fillColor(INK).text(`${label}: `, left, doc.y, { continued: true, width });
    doc.font(REGULAR).text(value);
  };

  // ---- header ----
  doc
    .font(BOLD)
    .fontSize(18)
    .fillColor(INK)
    .text(data.companyName, left, PAGE_MARGIN, { width: width * 0.55 });
  doc
    .font(BOLD)
    .fontSize(14)
    .fillColor(ACCENT)
    .text('Lieferschein / Lieferbericht', left + width * 0.45, PAGE_MARGIN + 2, { width: width * 0.55, align: 'right' });
  doc.font(REGULAR).fontSize(9.5).fillColor(INK);
  const meta = [
    ['Beleg-Nr.', data.belegnummer],
    ['Belegart', String(data.belegartId)],
    ['Tourdatum', formatDate(data.tourDate) + (data.tourName ? ` (${data.tourName})` : '')],
    ['Abgeschlossen', formatBerlin(data.completedAt)],
  ];
  let metaY = PAGE_MARGIN + 24;
  for (const [label, value] of meta) {
    doc
      .font(REGULAR)
      .fillColor(MUTED)
      .text(label, left + width * 0.45, metaY, { width: width * 0.27, align: 'right' });
    doc
      .font(BOLD)
      .fillColor(INK)
      .text(value, left + width * 0.74, metaY, { width: width * 0.26, align: 'right' });
    // A value that wraps (a long tour name) pushes the next line down.
    metaY = Math.max(metaY + 13, doc.y + 2);
  }
  doc.y = Math.max(doc.y, metaY) + 8;
  rule();
  doc.moveDown(0.8);

  // ---- addresses ----
  const columnWidth = (width - 20) / 2;
  const top = doc.y;
  doc.font(BOLD).fontSize(9).fillColor(MUTED).text('KUNDE', left, top, { width: columnWidth });
  doc.font(BOLD).fontSize(10.5).fillColor(INK).text(data.customer.name, { width: columnWidth });
  doc
    .font(REGULAR)
    .fontSize(9.5)
    .text([...addressLines(data.customer.address), `Kunden-Nr. ${data.customer.erpCustomerId}`].join('\n'), { width: columnWidth });
  const leftBottom = doc.y;
  doc
    .font(BOLD)
    .fontSize(9)
    .fillColor(MUTED)
    .text('LIEFERANSCHRIFT', left + columnWidth + 20, top, { width: columnWidth });
  doc.font(BOLD).fontSize(10.5).fillColor(INK).text(data.customer.name, { width: columnWidth });
  doc.font(REGULAR).fontSize(9.5).text(addressLines(data.deliveryAddress).join('\n'), { width: columnWidth });
  doc.y = Math.max(leftBottom, doc.y) + 10;
  doc.x = left;
  field('Fahrer', `${data.driver.name} (Pers.-Nr. ${data.driver.personalnummer})`);
  field('Fahrzeug', data.carPlate ?? '–');

  // ---- positions ----
  section('Positionen', 80);
  const columns = [
    { title: 'Pos.', width: 30, align: 'left' as const },
    { title: 'Art.-Nr.', width: 70, align: 'left' as const },
    { title: 'Artikel', width: 142, align: 'left' as const },
    { title: 'Bestellt', width: 44, align: 'right' as const },
    { title: 'Geliefert', width: 48, align: 'right' as const },
    { title: 'Gutgeschr.', width: 60, align: 'right' as const },
    { title: 'Entfernt', width: 44, align: 'right' as const },
    { title: 'Status', width: width - 438, align: 'right' as const },
  ];
  const drawRow = (cells: string[], bold: boolean, shade: boolean) => {
    doc.font(bold ? BOLD : REGULAR).fontSize(8.5);
    const height = Math.max(...cells.map((cell, i) => doc.heightOfString(cell, { width: columns[i].width - 6 }))) + 6;
    if (doc.y + height > bottom()) {
      doc.addPage();
      if (!bold)
        drawRow(
          columns.map((c) => c.title),
          true,
          false,
        );
    }
    const y = doc.y;
    if (shade) doc.rect(left, y, width, height).fill('#f1f4f8');
    let x = left;
    cells.forEach((cell, i) => {
      doc.fillColor(bold ? MUTED : INK).text(cell, x + 3, y + 3, { width: columns[i].width - 6, align: columns[i].align });
      x += columns[i].width;
    });
    doc.y = y + height;
    doc
      .moveTo(left, doc.y)
      .lineTo(left + width, doc.y)
      .lineWidth(0.4)
      .strokeColor(RULE)
      .stroke();
  };
  drawRow(
    columns.map((c) => c.title),
    true,
    false,
  );
  data.positions.forEach((p, i) => {
    const unit = p.unit ? ` ${p.unit}` : '';
    drawRow(
      [
        String(p.lineNumber),
        p.articleNumber,
        p.articleName + (p.scannable ? '' : ' (Leistung)'),
        `${p.ordered}${unit}`,
        `${p.delivered}${unit}`,
        p.credited ? `${p.credited}${unit}` : '–',
        p.removed ? `${p.removed}${unit}` : '–',
        // A line without scans (a charge, a service) counts as delivered unless removed.
        !p.scannable && p.state === 'InProgress' ? stateLabel.Done : (stateLabel[p.state] ?? p.state),
      ],
      false,
      i % 2 === 1,
    );
  });
  doc.x = left;

  // ---- money ----
  section('Betrags-Gutschrift und Zahlung', 90);
  field('Betrags-Gutschrift', data.credit ? `${formatEuro(data.credit.amountCents)} – Grund: ${data.credit.reason}` : 'keine');
  const { payment } = data;
  field('Zahlungsart', payment.methodName ? `${payment.methodName}${payment.methodCode ? ` (${payment.methodCode})` : ''}` : '–');
  field('Zahlungsbedingung', payment.paymentTerm ?? '–');
  field('Offener Betrag laut ERP', formatEuro(payment.erpOpenAmountCents));
  field('Offener Betrag bei Lieferung', formatEuro(payment.openAmountCents));
  field(
    'Kassiert',
    payment.collectedAmountCents > 0
      ? `${formatEuro(payment.collectedAmountCents)}${payment.loggedAt ? ` am ${formatBerlin(payment.loggedAt)}` : ''}`
      : 'nichts kassiert',
  );

  // ---- services ----
  section('Leistungen', 40);
  if (data.serviceValues.length === 0) doc.fillColor(MUTED).text('keine erfasst');
  for (const service of data.serviceValues) field(service.name, service.value);

  // ---- notes ----
  section('Hinweise zur Lieferung', 40);
  if (data.notes.length === 0) doc.fillColor(MUTED).text('keine');
  for (const note of data.notes) {
    ensureSpace(28);
    doc.font(REGULAR).fontSize(8.5).fillColor(MUTED).text(formatBerlin(note.createdAt), left, doc.y, { width });
    doc
      .font(REGULAR)
      .fontSize(9.5)
      .fillColor(INK)
      .text([note.text, note.hasImage ? '[Foto hinterlegt]' : null].filter(Boolean).join(' '), { width });
    doc.moveDown(0.3);
  }

  // ---- internal note ----
  if (data.internalNote) {
    section('Interne Notiz des Fahrers', 50);
    const n = data.internalNote;
    doc
      .font(REGULAR)
      .fontSize(8.5)
      .fillColor(MUTED)
      .text(`${formatBerlin(n.at)} · ${n.driver}${n.carPlate ? ` · Fahrzeug ${n.carPlate}` : ''}`, left, doc.y, { width });
    doc.font(REGULAR).fontSize(9.5).fillColor(INK).text(n.text, { width });
  }

  // ---- signatures ----
  const boxHeight = 75;
  section('Unterschriften', boxHeight + 55);
  const boxTop = doc.y + 4;
  const signatures: [string, Buffer | undefined][] = [
    ['Unterschrift Kunde', customerSignature],
    ['Unterschrift Fahrer', driverSignature],
  ];
  signatures.forEach(([label, image], i) => {
    const x = left + i * (columnWidth + 20);
    if (image) doc.image(image, x + 4, boxTop, { fit: [columnWidth - 8, boxHeight], align: 'center', valign: 'bottom' });
    else
      doc
        .font(REGULAR)
        .fontSize(8.5)
        .fillColor(MUTED)
        .text('(Bild nicht lesbar)', x + 4, boxTop + boxHeight - 12, { width: columnWidth - 8 });
    doc
      .moveTo(x, boxTop + boxHeight + 4)
      .lineTo(x + columnWidth, boxTop + boxHeight + 4)
      .lineWidth(0.8)
      .strokeColor(INK)
      .stroke();
    doc
      .font(REGULAR)
      .fontSize(8.5)
      .fillColor(MUTED)
      .text(`${label}, ${formatBerlin(data.completedAt)}`, x, boxTop + boxHeight + 8, { width: columnWidth });
  });
  doc.y = boxTop + boxHeight + 24;
  doc.x = left;
  doc
    .font(REGULAR)
    .fontSize(8.5)
    .fillColor(MUTED)
    .text(
      'Mit der Unterschrift bestätigt der Kunde den Empfang der oben aufgeführten Ware in einwandfreiem Zustand, soweit nicht anders vermerkt.',
      left,
      doc.y,
      { width },
    );

  // ---- footer on every page ----
  const range = doc.bufferedPageRange();
  for (let i = range.start; i < range.start + range.count; i++) {
    doc.switchToPage(i);
    const y = doc.page.height - PAGE_MARGIN - 12;
    // Writing below the bottom margin would open a new page; lift the margin for the footer.
    doc.page.margins.bottom = 0;
    doc
      .font(REGULAR)
      .fontSize(7.5)
      .fillColor(MUTED)
      .text(`${data.companyName} · Lieferbericht ${data.belegnummer} · Zeiten in Europe/Berlin`, left, y, {
        width: width * 0.75,
        lineBreak: false,
      });
    doc.text(`Seite ${i - range.start + 1} von ${range.count}`, left + width * 0.75, y, {
      width: width * 0.25,
      align: 'right',
      lineBreak: false,
    });
  }
  doc.end();
  return finished;
}
