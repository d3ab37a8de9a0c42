import { randomUUID } from 'node:crypto';
import type { SyncTourInput } from '../../shared/schemas/tours.js';

type DeliveryInput = SyncTourInput['deliveries'][number];
type PositionInput = DeliveryInput['positions'][number];

export interface TourPayloadOptions {
  date?: string;
  deliveries?: number;
  /** Positions per delivery; line numbers 10, 20, ... */
  positions?: number;
  name?: string;
  driverName?: string;
  paymentMethodCode?: string | null;
}

const address = (street: string, houseNumber = '1') => ({
  street,
  houseNumber,
  postalCode: '10115',
  city: 'Berlin',
  country: 'Deutschland',
  addition: null,
});

export function position(lineNumber: number, overrides: Partial<PositionInput> = {}): PositionInput {
  const article =
    lineNumber % 30 === 0
      ? { articleNumber: 'T-900001', name: 'Frachtpauschale', scannable: false, defaultWarehouse: null }
      : {
          articleNumber: `T-${100000 + lineNumber}`,
          name: `Testartikel ${lineNumber}`,
          scannable: true,
          defaultWarehouse: { code: 'T-HL', name: 'Testlager' },
        };
  return { lineNumber, quantity: 3, unit: 'Stk', unitPriceCents: 250, article, warehouse: article.defaultWarehouse, ...overrides };
}

export function delivery(overrides: Partial<DeliveryInput> = {}, positions = 2): DeliveryInput {
  const erpCustomerId = 1_000_000 + Math.floor(Math.random() * 1e9);
  const customerAddress = address('Marktplatz', String(erpCustomerId % 100));
  return {
    belegartId: 20,
    belegnummer: `T-${randomUUID().slice(0, 13)}`,
    customer: { erpCustomerId, name: `Kunde ${erpCustomerId}`, address: customerAddress },
    deliveryAddress: customerAddress,
    paymentMethodCode: null,
    paymentTerm: '14 Tage netto',
    openAmountCents: 1500,
    positions: Array.from({ length: positions }, (_, i) => position((i + 1) * 10)),
    contacts: [
      {
        role: 'header',
        name1: `Kunde ${erpCustomerId}`,
        address: customerAddress,
        channels: [{ kind: 'phone', position: 1, value: '030 1234567' }],
      },
      {
        role: 'delivery',
        name1: `Kunde ${erpCustomerId}`,
        address: customerAddress,
        channels: [{ kind: 'phone', position: 1, value: '030 1234567' }],
      },
      {
        role: 'contact_person',
        anrede: 'Frau',
        name1: 'Anna Schulz',
        address: null,
        channels: [{ kind: 'mobile', position: 1, value: '0171 2345678' }],
      },
    ],
    ...overrides,
  };
}

/** A tour as the ERP sends it: `deliveries` deliveries with `positions` lines each, in sequence 10, 20, ... */
export function tourPayload(personalnummer: number, options: TourPayloadOptions = {}): SyncTourInput {
  return {
    driver: { personalnummer, name: options.driverName ?? `Fahrer ${personalnummer}` },
    tourDate: options.date ?? '2026-04-14',
    name: options.name ?? 'Tour Mitte',
    deliveries: Array.from({ length: options.deliveries ?? 2 }, (_, i) =>
      delivery({ sequence: (i + 1) * 10, paymentMethodCode: options.paymentMethodCode ?? null }, options.positions ?? 2),
    ),
  };
}

/** A deep copy to change for a resend. */
export const copy = <T>(value: T): T => structuredClone(value);
