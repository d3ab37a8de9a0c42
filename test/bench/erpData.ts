import type { SyncTourRequest } from '../../shared/schemas/tours.js';
import type { CompletionWriteBack, ErpDocument, ErpGateway } from '../../server/integrations/erp/gateway.js';

export interface ErpSize {
  tours: number;
  deliveries: number;
  positions: number;
}

/** The address of ERP customer `n`, the same in every ERP day. */
export const address = (n: number) => ({
  street: `Industriestraße ${n % 97}`,
  houseNumber: String(1 + (n % 180)),
  postalCode: String(10000 + ((n * 37) % 89999)),
  city: ['Berlin', 'Potsdam', 'Cottbus', 'Frankfurt (Oder)'][n % 4],
  country: 'Deutschland',
  addition: n % 5 === 0 ? 'Lieferrampe' : null,
});

/**
 * A large ERP day, the same for the same date every time: `tours` drivers with `deliveries`
 * deliveries of `positions` lines each, drawn from a catalogue of 800 articles, 4 warehouses
 * and 2000 customers, with header, delivery, contact-person and billing contacts.
 */
export function largeErpDay(date: string, size: ErpSize): SyncTourRequest[] {
  const warehouses = ['HL', 'KL', 'AL', 'NL'].map((code) => ({ code, name: `Lager ${code}` }));
  return Array.from({ length: size.tours }, (_, t) => ({
    driver: { personalnummer: 70_001 + t, name: `Fahrer ${70_001 + t}`, active: true },
    tourDate: date,
    name: `Tour ${t + 1}`,
    deliveries: Array.from({ length: size.deliveries }, (_, d) => {
      const n = t * size.deliveries + d;
      const customerId = 500_000 + ((n * 7919) % 2000);
      return {
        belegartId: 20,
        belegnummer: `B${date.replaceAll('-', '')}-${t + 1}-${d + 1}`,
        sequence: (d + 1) * 10,
        customer: { erpCustomerId: customerId, name: `Kunde ${customerId}`, address: address(customerId) },
        deliveryAddress: address(customerId),
        paymentMethodCode: null,
        paymentTerm: '14 Tage netto',
        openAmountCents: (n % 3) * 1000,
        positions: Array.from({ length: size.positions }, (_, p) => {
          const article = (n * 31 + p * 17) % 800;
          return {
            lineNumber: (p + 1) * 10,
            quantity: 1 + ((n + p) % 12),
            unit: 'Stk',
            unitPriceCents: 100 + article,
            article: {
              articleNumber: `ART-${article}`,
              name: `Artikel ${article}`,
              scannable: article % 10 !== 0,
              defaultWarehouse: warehouses[article % 4],
            },
            warehouse: warehouses[article % 4],
          };
        }),
        contacts: [
          {
            role: 'header' as const,
            anrede: 'Firma',
            name1: `Kunde ${customerId}`,
            address: address(customerId),
            channels: [{ kind: 'phone' as const, position: 1, value: `030 ${customerId}` }],
          },
          { role: 'delivery' as const, anrede: 'Firma', name1: `Kunde ${customerId}`, address: address(customerId), channels: [] },
          {
            role: 'contact_person' as const,
            anrede: 'Frau',
            name1: `Ansprechpartnerin ${customerId}`,
            address: null,
            channels: [
              { kind: 'mobile' as const, position: 1, value: `0171 ${customerId}` },
              { kind: 'email' as const, position: 1, value: `k${customerId}@example.de` },
            ],
          },
          {
            role: 'billing' as const,
            anrede: 'Firma',
            name1: `Kunde ${customerId}`,
            name2: 'Buchhaltung',
            address: address(customerId + 1),
            channels: [],
          },
        ],
      };
    }),
  }));
}

export function benchErp(size: ErpSize): ErpGateway {
  return {
    fetchTours: async (date) => ({ tours: largeErpDay(date, size), refused: [] }),
    pushCompletion: async (_document: ErpDocument, _writeBack: CompletionWriteBack) => undefined,
    pushCancellation: async () => undefined,
  };
}
