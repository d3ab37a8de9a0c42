/**
 * The driver's day every release's fixtures are recorded from (test/compat/record.ts), and what a
 * test needs to play them against the current service: the same tour and master data, the ids
 * of the recording mapped to the ids the current service gave them, and a tour's state without
 * what differs between two services by nature (ids, times, document references).
 */
import sharp from 'sharp';

export const TOUR_DATE = '2026-12-08';

/** One tour of three deliveries with two scannable lines and a freight flat rate each. */
export function tourPayload(personalnummer: number, tag: string) {
  const address = { street: 'Marktplatz', houseNumber: '7', postalCode: '10115', city: 'Berlin', country: 'Deutschland', addition: null };
  const line = (lineNumber: number) => ({
    lineNumber,
    quantity: 3,
    unit: 'Stk',
    unitPriceCents: 250,
    article:
      lineNumber === 30
        ? { articleNumber: `F-${tag}`, name: 'Frachtpauschale', scannable: false, defaultWarehouse: null }
        : { articleNumber: `A-${tag}-${lineNumber}`, name: `Kiste ${lineNumber}`, scannable: true, defaultWarehouse: null },
  });
  return {
    driver: { personalnummer, name: `Fahrer ${personalnummer}` },
    tourDate: TOUR_DATE,
    name: `Tour ${tag}`,
    deliveries: [0, 1, 2].map((d) => ({
      belegartId: 20,
      belegnummer: `C-${tag}-${d}`,
      sequence: d + 1,
      customer: { erpCustomerId: personalnummer * 10 + d, name: `Kunde ${d}`, address },
      deliveryAddress: address,
      paymentMethodCode: null,
      paymentTerm: '14 Tage netto',
      openAmountCents: 1500,
      positions: [10, 20, 30].map(line),
      contacts: [],
    })),
  };
}

export interface MasterData {
  carId: string;
  paymentMethodId: string;
  serviceId: string;
}

export interface SetUp {
  token: string;
  tourId: string;
  tour: Tour;
  master: MasterData;
}

/** The service's public tour, as far as these helpers read it. */
export interface Tour {
  tour: { id: string };
  deliveries: { id: string; sortOrder: number; positions: { id: string; lineNumber: number }[] }[];
  [key: string]: unknown;
}

async function call(baseUrl: string, method: string, path: string, body: unknown, headers: Record<string, string>) {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** The tour through the sync endpoint (admin key), a token of its driver, and a car, a payment method and a service of theirs. */
export async function setUp(baseUrl: string, adminKey: string, personalnummer: number, tag: string): Promise<SetUp> {
  const admin = { 'x-admin-api-key': adminKey };
  await call(baseUrl, 'POST', '/sync/tour', tourPayload(personalnummer, tag), admin);
  const { accessToken: token } = await call(baseUrl, 'POST', '/dev/token', { personalnummer }, admin);
  const bearer = { authorization: `Bearer ${token}` };
  const car = await call(baseUrl, 'POST', '/me/cars', { plate: `B-${tag}` }, bearer);
  const method = await call(baseUrl, 'POST', '/payment-methods', { code: `BAR-${tag}`, name: 'Barzahlung', collectOnSite: true }, bearer);
  const service = await call(
    baseUrl,
    'POST',
    '/services',
    { key: `altgeraet-${tag}`, name: 'Altgerät mitgenommen', kind: 'boolean' },
    bearer,
  );
  const { tours } = await call(baseUrl, 'GET', `/me/tours?date=${TOUR_DATE}`, undefined, bearer);
  const tourId = tours[0].id as string;
  const tour = (await call(baseUrl, 'GET', `/tours/${tourId}`, undefined, bearer)) as Tour;
  return { token, tourId, tour, master: { carId: car.car.id, paymentMethodId: method.paymentMethod.id, serviceId: service.service.id } };
}

export const signature = (stroke: string) =>
  sharp(
    Buffer.from(
      `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="150"><path d="${stroke}" stroke="#102a43" stroke-width="4" fill="none"/></svg>`,
    ),
  )
    .png()
    .toBuffer();

export const photo = (red: number) =>
  sharp({ create: { width: 64, height: 48, channels: 3, background: { r: red, g: 90, b: 40 } } })
    .jpeg()
    .toBuffer();

/** The SDK calls of the day; every release's SDK has had them. */
export interface DriverSdk {
  scan(itemId: string): Promise<unknown>;
  unscan(itemId: string): Promise<unknown>;
  removeItem(itemId: string, options?: { quantity?: number; reason?: string }): Promise<unknown>;
  unremoveItem(itemId: string): Promise<unknown>;
  holdItem(itemId: string, options?: { reason?: string }): Promise<unknown>;
  unholdItem(itemId: string): Promise<unknown>;
  holdDelivery(deliveryId: string, reason: string): Promise<unknown>;
  resumeDelivery(deliveryId: string): Promise<unknown>;
  cancelDelivery(deliveryId: string, reason: string): Promise<unknown>;
  assignCar(deliveryId: string, carId: string | null): Promise<unknown>;
  setCredit(deliveryId: string, credit: { amountCents: number; reason: string }): Promise<unknown>;
  removeCredit(deliveryId: string): Promise<unknown>;
  recordPayment(deliveryId: string, payment: { paymentMethodId: string; expectedAmountCents?: number }): Promise<unknown>;
  createNote(deliveryId: string, note: { text?: string | null }): Promise<{ noteId: string }>;
  createImageNote(deliveryId: string, note: { image: Uint8Array; contentType?: string; text?: string | null }): Promise<{ noteId: string }>;
  updateNote(deliveryId: string, noteId: string, patch: { text?: string | null }): Promise<unknown>;
  deleteNote(deliveryId: string, noteId: string): Promise<unknown>;
  setServiceValue(deliveryId: string, serviceId: string, value: { boolValue?: boolean | null }): Promise<unknown>;
  clearServiceValue(deliveryId: string, serviceId: string): Promise<unknown>;
  complete(
    deliveryId: string,
    input: { customerSignature: Uint8Array; driverSignature: Uint8Array; acknowledgements: Record<string, unknown> },
  ): Promise<unknown>;
}

/**
 * Every event type, a photo note with text and one without, a completion, and a scan the service
 * refuses (the delivery was canceled before it).
 */
export async function driveDay(sdk: DriverSdk, tour: Tour, master: MasterData) {
  const [d0, d1, d2] = [...tour.deliveries].sort((a, b) => a.sortOrder - b.sortOrder);
  const line = (d: Tour['deliveries'][number], n: number) => d.positions.find((p) => p.lineNumber === n)!.id;
  await sdk.assignCar(d0.id, master.carId);
  for (let i = 0; i < 3; i++) await sdk.scan(line(d0, 10));
  for (let i = 0; i < 2; i++) await sdk.scan(line(d0, 20));
  await sdk.unscan(line(d0, 20));
  for (let i = 0; i < 2; i++) await sdk.scan(line(d0, 20));
  await sdk.removeItem(line(d0, 20), { quantity: 1, reason: 'beschädigt' });
  await sdk.unremoveItem(line(d0, 20));
  await sdk.holdItem(line(d0, 10), { reason: 'Karton nass' });
  await sdk.unholdItem(line(d0, 10));
  await sdk.setCredit(d0.id, { amountCents: 1000, reason: 'Kulanz' });
  await sdk.removeCredit(d0.id);
  const { noteId } = await sdk.createNote(d0.id, { text: 'Hintereingang' });
  await sdk.updateNote(d0.id, noteId, { text: 'Hintereingang, 2. Stock' });
  await sdk.deleteNote(d0.id, noteId);
  await sdk.setServiceValue(d0.id, master.serviceId, { boolValue: true });
  await sdk.clearServiceValue(d0.id, master.serviceId);
  await sdk.setServiceValue(d0.id, master.serviceId, { boolValue: false });
  await sdk.recordPayment(d0.id, { paymentMethodId: master.paymentMethodId, expectedAmountCents: 1500 });
  const photoNote = await sdk.createImageNote(d0.id, { image: await photo(200), contentType: 'image/jpeg', text: 'Abstellort' });
  await sdk.complete(d0.id, {
    customerSignature: await signature('M10 100 C 60 20, 120 140, 180 60'),
    driverSignature: await signature('M20 40 L 380 110'),
    acknowledgements: { receiptConfirmed: true, notesAcknowledged: true, acknowledgedNoteIds: [photoNote.noteId] },
  });
  await sdk.holdDelivery(d1.id, 'Kunde nicht da');
  await sdk.resumeDelivery(d1.id);
  await sdk.removeItem(line(d1, 10), { reason: 'abgelehnt' });
  await sdk.cancelDelivery(d1.id, 'Adresse falsch');
  await sdk.scan(line(d1, 20));
  await sdk.createImageNote(d2.id, { image: await photo(30), contentType: 'image/jpeg' });
  await sdk.holdDelivery(d2.id, 'Tor zu');
}

/** The ids of one service's tour and master data to those of another's, by their place in the tour. */
export function idMap(from: { tour: Tour; master: MasterData }, to: { tour: Tour; master: MasterData }): Map<string, string> {
  const map = new Map<string, string>([[from.tour.tour.id, to.tour.tour.id]]);
  for (const key of ['carId', 'paymentMethodId', 'serviceId'] as const) map.set(from.master[key], to.master[key]);
  const sorted = (t: Tour) => [...t.deliveries].sort((a, b) => a.sortOrder - b.sortOrder);
  const [a, b] = [sorted(from.tour), sorted(to.tour)];
  a.forEach((d, i) => {
    map.set(d.id, b[i].id);
    for (const p of d.positions) map.set(p.id, b[i].positions.find((q) => q.lineNumber === p.lineNumber)!.id);
  });
  for (const list of ['customers', 'articles', 'warehouses'] as const) {
    const [x, y] = [from.tour[list] as { id: string }[], to.tour[list] as { id: string }[]];
    x.forEach((entry, i) => y[i] && map.set(entry.id, y[i].id));
  }
  return map;
}

/** `text` with every id of `map` replaced by its counterpart. */
export function rewriteIds(text: string, map: Map<string, string>): string {
  return text.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, (id) => map.get(id.toLowerCase()) ?? id);
}

const VOLATILE = /^id$|Ids?$|Code$|At$|^(seq|imageAttachment|belegnummer|articleNumber|code|key|plate|name|tourDate|personalnummer)$/;

/** A tour's state without what two services give differently by nature: ids, times, document references, names made per run. */
export function comparable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(comparable);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !VOLATILE.test(key))
      .map(([key, v]) => [key, comparable(v)]),
  );
}
