import { z } from 'zod';
import { Address, ContactKind, ContactRole, ErpKey, ErpNumber, ErpText, IsoDate, Uuid } from './common.js';

const Int64 = ErpNumber.min(1).max(Number.MAX_SAFE_INTEGER);

/**
 * The most entries each list of a request may hold: generous for a day's tour, and small enough
 * that no request within the body limit makes the service do unbounded work (published as maxItems).
 */
export const listLimits = {
  deliveriesPerTour: 500,
  positionsPerDelivery: 1000,
  contactsPerDelivery: 50,
  channelsPerContact: 50,
  /** A tour may hold more deliveries than one sync sends: those no longer sent stay. */
  deliveryOrderIds: 2000,
} as const;
const Code = z.object({
  code: ErpKey.describe('Warehouse code, its identity (1 to 100 characters, trimmed)'),
  name: ErpText.describe('Warehouse name as the driver sees it'),
});

export const SyncPosition = z.object({
  lineNumber: z
    .int32()
    .describe("The line's number on the document, its identity within the delivery (any 32-bit integer, unique per delivery)"),
  quantity: z.int32().min(1).describe('Pieces to deliver (at least 1); the driver scans each piece of a scannable article'),
  unit: ErpText.optional().describe('Unit shown beside the quantity (Stk, Karton, kg)'),
  // Any int, as the contract has it: a line that takes back a deposit has a negative price.
  unitPriceCents: z
    .int32()
    .nullable()
    .optional()
    .describe(
      'Price of one unit in cents, gross; negative for a deposit taken back; lowers the open amount when pieces are removed or credited',
    ),
  article: z
    .object({
      articleNumber: ErpKey.describe('Article number, its identity (1 to 100 characters, trimmed)'),
      name: ErpText.describe('Article name as the driver sees it'),
      scannable: z
        .boolean()
        .describe('false for services and flat rates (freight, surcharges): shown, never scanned, never blocking the loading'),
      defaultWarehouse: Code.nullable().optional().describe('Where the article is usually stored; master data of the article'),
    })
    .describe('The article; master data, shared by every line that names its number (the last description of an import wins)'),
  warehouse: Code.nullable()
    .optional()
    .describe("Where this line is picked from, when it differs from the article's default warehouse; null: the default"),
});

const OptionalName = ErpText.nullable().optional();
// The contract carries no fax ("Fax is not carried"): an ERP's fax numbers are dropped, not refused.
const Channel = z.object({
  kind: z.enum([...ContactKind.options, 'fax']).describe('phone, mobile, email or web; fax is accepted and dropped'),
  position: z.int32().describe('Order within its kind as the ERP keeps it (first phone 1, second 2)'),
  value: ErpText.trim().min(1).describe('The number or address, as the driver dials or writes it'),
});
const isCarried = (channel: z.output<typeof Channel>): channel is z.output<typeof Channel> & { kind: ContactKind } =>
  channel.kind !== 'fax';

export const SyncContact = z.object({
  role: ContactRole.describe('What the ERP address record stands for: header, delivery, billing, contact_person or customer_master'),
  anrede: OptionalName.describe('Salutation (Herr, Frau, Firma)'),
  titel: OptionalName.describe('Title (Dr.)'),
  name1: OptionalName.describe('First name line: the company or the person'),
  name2: OptionalName.describe('Second name line'),
  name3: OptionalName.describe('Third name line'),
  abteilung: OptionalName.describe('Department'),
  funktion: OptionalName.describe('Function of a contact person (Einkauf, Filialleitung)'),
  address: Address.nullable().optional().describe('null for a pure contact person without street and city'),
  channels: z
    .array(Channel)
    .describe('Phone numbers, mobiles, e-mail and web addresses of the record')
    .max(listLimits.channelsPerContact)
    .default([])
    .transform((channels) => channels.filter(isCarried)),
});

export const SyncDelivery = z.object({
  belegartId: z.int32().describe('Document kind (Belegart) as the ERP numbers it; with belegnummer the identity of the delivery'),
  belegnummer: ErpKey.describe('Document number (Belegnummer), 1 to 100 characters, trimmed; unique per belegartId'),
  sequence: z
    .int32()
    .optional()
    .describe("Place in the tour's order (ascending); without it, the place in this list. The driver's own order wins once set"),
  customer: z
    .object({
      erpCustomerId: Int64.describe('Customer number, its identity'),
      name: ErpText.describe('Customer name'),
      address: Address.describe("The customer's own address (master data; follows the ERP)"),
    })
    .describe('The customer; master data shared by every delivery to them'),
  deliveryAddress: Address.describe('Where to deliver; kept as first sent: later changes do not move a delivery already imported'),
  paymentMethodCode: ErpText.nullable()
    .optional()
    .describe("The ERP's payment code (BAR, EC, RECHNUNG): linked to Tourline's payment method of that code, see Payment codes"),
  paymentTerm: ErpText.nullable()
    .optional()
    .describe('Payment term as printed (14 Tage netto); written back unchanged with the completion'),
  openAmountCents: z
    .int32()
    .min(0)
    .describe('Amount the driver collects in cents, gross, before credits; 0 when nothing is collected on site'),
  positions: z.array(SyncPosition).max(listLimits.positionsPerDelivery).describe('The document lines'),
  contacts: z
    .array(SyncContact)
    .max(listLimits.contactsPerDelivery)
    .default([])
    .describe('Address records of the document (header, delivery, billing, contact person); equal ones are merged'),
  withdrawn: z
    .object({
      reason: ErpText.trim().min(1).describe("Why the ERP withdraws the delivery; the driver's app shows it as the cancel reason"),
    })
    .nullable()
    .optional()
    .describe(
      'Set to withdraw a delivery nobody has worked on: it becomes canceled with this reason. One a driver has worked on stays and is reported by number; one not stored yet is not created',
    ),
});

/** A delivery's identity, as the contract has it: `(belegartId, belegnummer)`. */
export const deliveryKey = (d: { belegartId: number; belegnummer: string }) => `${d.belegartId}/${d.belegnummer}`;

export const SyncTourRequest = z
  .object({
    driver: z
      .object({
        personalnummer: Int64.describe("The driver account's Personalnummer (its login id); created when new"),
        name: ErpText.trim().min(1).describe("The account's name"),
        active: z.boolean().optional().describe('false deactivates the account; left out: unchanged'),
      })
      .describe('Whose tour it is'),
    tourDate: IsoDate.describe('The Berlin calendar day of the tour, YYYY-MM-DD; with the driver the identity of the tour'),
    name: ErpText.optional().describe('Tour name shown to the driver (Tour Nord); left out: unchanged'),
    deliveries: z
      .array(SyncDelivery)
      .max(listLimits.deliveriesPerTour)
      .describe('The deliveries, in ERP order; one no longer sent stays where it is'),
  })
  .superRefine((tour, ctx) => {
    const seen = new Set<string>();
    tour.deliveries.forEach((d, i) => {
      const key = deliveryKey(d);
      if (seen.has(key)) ctx.addIssue({ code: 'custom', path: ['deliveries', i], message: `delivery ${key} appears twice` });
      seen.add(key);
      const lines = new Set<number>();
      d.positions.forEach((p, j) => {
        if (lines.has(p.lineNumber))
          ctx.addIssue({
            code: 'custom',
            path: ['deliveries', i, 'positions', j, 'lineNumber'],
            message: `line ${p.lineNumber} appears twice`,
          });
        lines.add(p.lineNumber);
      });
    });
  })
  .meta({ id: 'SyncTourRequest' });
export type SyncTourRequest = z.output<typeof SyncTourRequest>;
export type SyncTourInput = z.input<typeof SyncTourRequest>;

export const Tour = z
  .object({
    id: Uuid,
    accountId: ErpNumber,
    tourDate: IsoDate,
    name: z.string().nullable(),
  })
  .meta({ id: 'Tour' });
export type Tour = z.infer<typeof Tour>;

export const SyncTourResponse = z
  .object({
    tour: Tour,
    created: z.boolean(),
    deliveries: z.object({
      created: z.number().int(),
      updated: z.number().int(),
      unchanged: z.number().int(),
      moved: z.number().int(),
      withdrawn: z.number().int().describe('Deliveries the ERP withdrew (`withdrawn`) that nobody had worked on: now canceled'),
      withdrawalsRefused: z.array(z.string()).describe('Numbers of withdrawn deliveries a driver had worked on: kept as they are'),
      changesIgnored: z.array(z.string()).describe('Numbers of completed or canceled deliveries sent with changes: final, not changed'),
    }),
    positions: z.object({ created: z.number().int(), updated: z.number().int(), deleted: z.number().int() }),
  })
  .meta({ id: 'SyncTourResponse' });
export type SyncTourResponse = z.infer<typeof SyncTourResponse>;

export const DeliveryStateCounts = z.object({
  active: z.number().int(),
  held: z.number().int(),
  canceled: z.number().int(),
  completed: z.number().int(),
});

export const TourSummary = Tour.extend({
  deliveryCount: z.number().int(),
  deliveriesByState: DeliveryStateCounts,
  positionsToLoad: z.number().int(),
  positionsLoaded: z.number().int(),
}).meta({ id: 'TourSummary' });
export type TourSummary = z.infer<typeof TourSummary>;
export const TourSummaryList = z.object({ tours: z.array(TourSummary) }).meta({ id: 'TourSummaryList' });
export type TourSummaryList = z.infer<typeof TourSummaryList>;

export const SetDeliveryOrderRequest = z
  .object({ deliveryIds: z.array(Uuid).max(listLimits.deliveryOrderIds) })
  .meta({ id: 'SetDeliveryOrderRequest' });
export const SetDeliveryOrderResponse = z.object({ tourId: Uuid, deliveryIds: z.array(Uuid) }).meta({ id: 'SetDeliveryOrderResponse' });
export type SetDeliveryOrderResponse = z.infer<typeof SetDeliveryOrderResponse>;

export const Customer = z.object({ id: Uuid, erpCustomerId: ErpNumber, name: z.string(), address: Address }).meta({ id: 'Customer' });
export type Customer = z.infer<typeof Customer>;
export const Warehouse = z.object({ id: Uuid, code: z.string(), name: z.string() }).meta({ id: 'Warehouse' });
export type Warehouse = z.infer<typeof Warehouse>;
export const Article = z
  .object({
    id: Uuid,
    articleNumber: z.string(),
    name: z.string(),
    scannable: z.boolean(),
    defaultWarehouseId: Uuid.nullable(),
  })
  .meta({ id: 'Article' });
export type Article = z.infer<typeof Article>;

export const ContactChannel = z
  .object({
    id: Uuid,
    sourceId: Uuid,
    kind: ContactKind,
    position: z.number().int(),
    value: z.string(),
  })
  .meta({ id: 'ContactChannel' });
export const ContactSource = z
  .object({
    id: Uuid,
    deliveryId: Uuid,
    role: ContactRole,
    roles: z.array(ContactRole),
    position: z.number().int(),
    anrede: z.string().nullable(),
    titel: z.string().nullable(),
    name1: z.string().nullable(),
    name2: z.string().nullable(),
    name3: z.string().nullable(),
    abteilung: z.string().nullable(),
    funktion: z.string().nullable(),
    address: Address.nullable(),
    channels: z.array(ContactChannel),
  })
  .meta({ id: 'ContactSource' });
export type ContactSource = z.infer<typeof ContactSource>;
