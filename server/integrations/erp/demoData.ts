import type { Address } from '../../../shared/schemas/common.js';
import type { SyncTourRequest } from '../../../shared/schemas/tours.js';

type Random = () => number;

/** mulberry32: a small, fast PRNG; the same seed always gives the same sequence. */
function prng(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function seedOf(text: string): number {
  let hash = 0x811c9dc5;
  for (const char of text) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193);
  return hash >>> 0;
}

const int = (random: Random, min: number, max: number) => min + Math.floor(random() * (max - min + 1));
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)];

function shuffled<T>(random: Random, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

export const demoDrivers = [
  { personalnummer: 1001, name: 'Jonas Becker', region: 'Berlin Mitte' },
  { personalnummer: 1002, name: 'Lena Hoffmann', region: 'Berlin Nord' },
  { personalnummer: 1003, name: 'Mehmet Yılmaz', region: 'Potsdam und Umland' },
  { personalnummer: 1004, name: 'Sabine Krüger', region: 'Berlin Süd' },
  { personalnummer: 1005, name: 'Tobias Wagner', region: 'Brandenburg Ost' },
] as const;

const cities = [
  ['10115', 'Berlin'],
  ['10405', 'Berlin'],
  ['10827', 'Berlin'],
  ['12043', 'Berlin'],
  ['13347', 'Berlin'],
  ['14467', 'Potsdam'],
  ['14770', 'Brandenburg an der Havel'],
  ['15230', 'Frankfurt (Oder)'],
  ['16225', 'Eberswalde'],
  ['15711', 'Königs Wusterhausen'],
  ['16515', 'Oranienburg'],
  ['14612', 'Falkensee'],
  ['15517', 'Fürstenwalde/Spree'],
] as const;
const streets = [
  'Hauptstraße',
  'Bahnhofstraße',
  'Schillerstraße',
  'Goethestraße',
  'Lindenallee',
  'Am Markt',
  'Gartenstraße',
  'Friedrichstraße',
  'Bergstraße',
  'Kirchplatz',
  'Dorfstraße',
  'Mühlenweg',
  'Rosenstraße',
  'Parkstraße',
  'Waldweg',
] as const;
const businesses = [
  'Bäckerei',
  'Gasthaus',
  'Hotel',
  'Metzgerei',
  'Café',
  'Getränkemarkt',
  'Pflegeheim',
  'Kita',
  'Restaurant',
  'Kantine',
  'Feinkost',
  'Imbiss',
] as const;
const surnames = [
  'Schulz',
  'Müller',
  'Schmidt',
  'Fischer',
  'Weber',
  'Meyer',
  'Wagner',
  'Becker',
  'Hoffmann',
  'Schäfer',
  'Koch',
  'Richter',
  'Klein',
  'Wolf',
  'Neumann',
  'Schwarz',
  'Zimmermann',
  'Braun',
  'Hofmann',
  'Hartmann',
  'Lange',
  'Krause',
] as const;
const firstNames = ['Anna', 'Peter', 'Claudia', 'Michael', 'Sandra', 'Thomas', 'Julia', 'Stefan', 'Katrin', 'Andreas'] as const;
const additions = ['Hintereingang', 'Lieferrampe im Hof', '2. OG', 'Zufahrt über Parkplatz', 'Seiteneingang Küche'] as const;

const warehouses = {
  HL: { code: 'HL', name: 'Hauptlager Berlin' },
  KL: { code: 'KL', name: 'Kühllager' },
  AL: { code: 'AL', name: 'Außenlager Nord' },
} as const;

interface CatalogArticle {
  articleNumber: string;
  name: string;
  scannable: boolean;
  unit: string;
  priceCents: number | null;
  warehouse: keyof typeof warehouses | null;
}

export const demoArticles: CatalogArticle[] = [
  { articleNumber: '100001', name: 'Mineralwasser still 12 × 1,0 l', scannable: true, unit: 'Kiste', priceCents: 599, warehouse: 'HL' },
  { articleNumber: '100002', name: 'Apfelschorle 12 × 0,5 l', scannable: true, unit: 'Kiste', priceCents: 749, warehouse: 'HL' },
  { articleNumber: '100003', name: 'Pils 20 × 0,5 l', scannable: true, unit: 'Kiste', priceCents: 1599, warehouse: 'AL' },
  { articleNumber: '100004', name: 'Orangensaft 6 × 1,0 l', scannable: true, unit: 'Karton', priceCents: 899, warehouse: 'HL' },
  { articleNumber: '100005', name: 'Kaffee ganze Bohne 1 kg', scannable: true, unit: 'Beutel', priceCents: 1499, warehouse: 'HL' },
  { articleNumber: '100006', name: 'Weizenmehl Type 405 25 kg', scannable: true, unit: 'Sack', priceCents: 1899, warehouse: 'AL' },
  { articleNumber: '100007', name: 'Zucker 10 kg', scannable: true, unit: 'Sack', priceCents: 1199, warehouse: 'AL' },
  { articleNumber: '100008', name: 'Sonnenblumenöl 10 l', scannable: true, unit: 'Kanister', priceCents: 2499, warehouse: 'HL' },
  { articleNumber: '100009', name: 'Servietten weiß 1000 Stück', scannable: true, unit: 'Karton', priceCents: null, warehouse: 'HL' },
  { articleNumber: '100010', name: 'Spülmittel 5 l', scannable: true, unit: 'Kanister', priceCents: 1099, warehouse: 'HL' },
  { articleNumber: '100011', name: 'Cola 24 × 0,33 l Dose', scannable: true, unit: 'Tray', priceCents: 1299, warehouse: 'AL' },
  { articleNumber: '100012', name: 'Tomaten passiert 3 kg', scannable: true, unit: 'Dose', priceCents: 499, warehouse: 'HL' },
  { articleNumber: '200001', name: 'Butter 250 g × 40', scannable: true, unit: 'Karton', priceCents: 8990, warehouse: 'KL' },
  { articleNumber: '200002', name: 'Vollmilch 3,5 % 12 × 1 l', scannable: true, unit: 'Karton', priceCents: 1390, warehouse: 'KL' },
  { articleNumber: '200003', name: 'Sahne 30 % 10 × 1 l', scannable: true, unit: 'Karton', priceCents: null, warehouse: 'KL' },
  { articleNumber: '900001', name: 'Frachtpauschale', scannable: false, unit: 'Pauschale', priceCents: 1500, warehouse: null },
  { articleNumber: '900002', name: 'Leergutrücknahme', scannable: false, unit: 'Pauschale', priceCents: null, warehouse: null },
  { articleNumber: '900003', name: 'Kühlkettenzuschlag', scannable: false, unit: 'Pauschale', priceCents: 450, warehouse: null },
];

interface DemoCustomer {
  erpCustomerId: number;
  name: string;
  address: Address;
  person: { anrede: string; name: string; funktion: string };
  phone: string;
  mobile: string;
  email: string;
  billingElsewhere: boolean;
}

const mail = (text: string) =>
  text
    .toLowerCase()
    .replace(/ä/g, 'ae')
    .replace(/ö/g, 'oe')
    .replace(/ü/g, 'ue')
    .replace(/ß/g, 'ss')
    .replace(/[^a-z]+/g, '');

/** A fixed customer base: a customer looks the same on every day, so re-imports change nothing. */
const customerBase: DemoCustomer[] = (() => {
  const random = prng(seedOf('tourline-demo-customers'));
  return Array.from({ length: 160 }, (_, i) => {
    const business = pick(random, businesses);
    const surname = pick(random, surnames);
    const [postalCode, city] = pick(random, cities);
    const female = random() < 0.5;
    const first = pick(random, firstNames);
    const area = city === 'Berlin' ? '030' : `0${int(random, 3300, 3399)}`;
    return {
      erpCustomerId: 40_001 + i,
      name: `${business} ${surname}`,
      address: {
        street: pick(random, streets),
        houseNumber: String(int(random, 1, 120)),
        postalCode,
        city,
        country: 'Deutschland',
        addition: null,
      },
      person: {
        anrede: female ? 'Frau' : 'Herr',
        name: `${first} ${pick(random, surnames)}`,
        funktion: pick(random, ['Inhaber', 'Küchenchef', 'Einkauf', 'Hausmeister', 'Filialleitung']),
      },
      phone: `${area} ${int(random, 200000, 9999999)}`,
      mobile: `01${int(random, 51, 79)} ${int(random, 1000000, 99999999)}`,
      email: `${mail(business)}.${mail(surname)}@example.de`,
      billingElsewhere: random() < 0.15,
    };
  });
})();

function contactsOf(random: Random, customer: DemoCustomer, deliveryAddress: Address): SyncTourRequest['deliveries'][number]['contacts'] {
  const company = { name1: customer.name, name2: null, name3: null, anrede: 'Firma', titel: null, abteilung: null, funktion: null };
  const contacts: SyncTourRequest['deliveries'][number]['contacts'] = [
    { role: 'header', ...company, address: customer.address, channels: [{ kind: 'phone', position: 1, value: customer.phone }] },
    { role: 'delivery', ...company, address: deliveryAddress, channels: [] },
    {
      role: 'customer_master',
      ...company,
      address: customer.address,
      channels: [
        { kind: 'phone', position: 1, value: customer.phone },
        { kind: 'email', position: 1, value: customer.email },
      ],
    },
    {
      role: 'contact_person',
      anrede: customer.person.anrede,
      titel: null,
      name1: customer.person.name,
      name2: null,
      name3: null,
      abteilung: null,
      funktion: customer.person.funktion,
      address: null,
      channels: [
        { kind: 'mobile', position: 1, value: customer.mobile },
        { kind: 'email', position: 1, value: `${mail(customer.person.name)}@example.de` },
      ],
    },
  ];
  if (customer.billingElsewhere) {
    contacts.push({
      role: 'billing',
      ...company,
      name2: 'Buchhaltung',
      address: { ...customer.address, street: 'Postfach', houseNumber: String(1000 + (customer.erpCustomerId % 9000)), addition: null },
      channels: [],
    });
  } else if (random() < 0.5) {
    contacts.push({ role: 'billing', ...company, address: customer.address, channels: [] });
  }
  return contacts;
}

const compactDate = (date: string) => date.slice(2).replaceAll('-', '');

/**
 * The demo ERP's tours of a day: 3 to 5 drivers with 10 to 30 deliveries each, generated from
 * the date alone, so the same date always yields the same tours.
 */
export function generateDemoTours(date: string): SyncTourRequest[] {
  const random = prng(seedOf(`tourline-demo-${date}`));
  const drivers = demoDrivers.slice(0, int(random, 3, 5));
  const customers = shuffled(random, customerBase);
  let nextCustomer = 0;
  return drivers.map((driver, driverIndex) => {
    const count = int(random, 10, 30);
    const deliveries = Array.from({ length: count }, (_, i): SyncTourRequest['deliveries'][number] => {
      const customer = customers[nextCustomer++];
      const deliveryAddress: Address = random() < 0.2 ? { ...customer.address, addition: pick(random, additions) } : customer.address;
      const goods = shuffled(
        random,
        demoArticles.filter((a) => a.scannable),
      ).slice(0, int(random, 1, 7));
      const lines = [...goods, ...(random() < 0.35 ? [demoArticles.find((a) => a.articleNumber === '900001')!] : [])];
      if (goods.some((a) => a.warehouse === 'KL')) lines.push(demoArticles.find((a) => a.articleNumber === '900003')!);
      if (random() < 0.1) lines.push(demoArticles.find((a) => a.articleNumber === '900002')!);
      const positions = lines.map((article, n) => ({
        lineNumber: (n + 1) * 10,
        quantity: article.scannable ? int(random, 1, 12) : 1,
        unit: article.unit,
        unitPriceCents: article.priceCents,
        article: {
          articleNumber: article.articleNumber,
          name: article.name,
          scannable: article.scannable,
          defaultWarehouse: article.warehouse ? warehouses[article.warehouse] : null,
        },
        warehouse:
          article.warehouse && random() < 0.15
            ? warehouses[article.warehouse === 'HL' ? 'AL' : 'HL']
            : article.warehouse
              ? warehouses[article.warehouse]
              : null,
      }));
      const roll = random();
      const paymentMethodCode = roll < 0.25 ? 'BAR' : roll < 0.4 ? 'EC' : 'RECHNUNG';
      // The ERP knows every price, also where it does not send it on the line.
      const total = positions.reduce((sum, p) => sum + p.quantity * (p.unitPriceCents ?? 899), 0);
      return {
        belegartId: 20,
        belegnummer: `LS${compactDate(date)}${driverIndex + 1}${String(i + 1).padStart(3, '0')}`,
        sequence: (i + 1) * 10,
        customer: { erpCustomerId: customer.erpCustomerId, name: customer.name, address: customer.address },
        deliveryAddress,
        paymentMethodCode,
        paymentTerm: paymentMethodCode === 'RECHNUNG' ? '14 Tage netto' : 'Sofort bei Lieferung',
        openAmountCents: paymentMethodCode === 'RECHNUNG' ? 0 : total,
        positions,
        contacts: contactsOf(random, customer, deliveryAddress),
      };
    });
    return {
      driver: { personalnummer: driver.personalnummer, name: driver.name, active: true },
      tourDate: date,
      name: `Tour ${driver.region}`,
      deliveries,
    };
  });
}

/** Payment methods the demo ERP's codes refer to. */
export const demoPaymentMethods = [
  { code: 'BAR', name: 'Barzahlung', collectOnSite: true },
  { code: 'EC', name: 'EC-Karte', collectOnSite: true },
  { code: 'RECHNUNG', name: 'Rechnung', collectOnSite: false },
] as const;
