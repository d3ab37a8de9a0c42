import { z } from 'zod';
import { Address, ContactKind, ContactRole, ErpKey, ErpNumber, ErpText, IsoDate, Timestamp, Uuid } from './common.js';

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
const Code = z.object({ code: ErpKey, name: ErpText });

export const SyncPosition = z.object({
  lineNumber: z.int32(),
  quantity: z.int32().min(1),
  unit: ErpText.optional(),
  // Any int, as the contract has it: a line that takes back a deposit has a negative price.
  unitPriceCents: z.int32().nullable().optional(),
  article: z.object({
    articleNumber: ErpKey,
    name: ErpText,
    scannable: z.boolean(),
    defaultWarehouse: Code.nullable().optional(),
  }),
  warehouse: Code.nullable().optional(),
});

const OptionalName = ErpText.nullable().optional();
// The contract carries no fax ("Fax is not carried"): an ERP's fax numbers are dropped, not refused.
const Channel = z.object({ kind: z.enum([...ContactKind.options, 'fax']), position: z.int32(), value: ErpText.trim().min(1) });
const isCarried = (channel: z.output<typeof Channel>): channel is z.output<typeof Channel> & { kind: ContactKind } =>
  channel.kind !== 'fax';

export const SyncContact = z.object({
  role: ContactRole,
  anrede: OptionalName,
  titel: OptionalName,
  name1: OptionalName,
  name2: OptionalName,
  name3: OptionalName,
  abteilung: OptionalName,
  funktion: OptionalName,
  address: Address.nullable().optional(),
  channels: z
    .array(Channel)
    .max(listLimits.channelsPerContact)
    .default([])
    .transform((channels) => channels.filter(isCarried)),
});

export const SyncDelivery = z.object({
  belegartId: z.int32(),
  belegnummer: ErpKey,
  sequence: z.int32().optional(),
  customer: z.object({ erpCustomerId: Int64, name: ErpText, address: Address }),
  deliveryAddress: Address,
  paymentMethodCode: ErpText.nullable().optional(),
  paymentTerm: ErpText.nullable().optional(),
  openAmountCents: z.int32().min(0),
  positions: z.array(SyncPosition).max(listLimits.positionsPerDelivery),
  contacts: z.array(SyncContact).max(listLimits.contactsPerDelivery).default([]),
});

/** A delivery's identity, as the contract has it: `(belegartId, belegnummer)`. */
export const deliveryKey = (d: { belegartId: number; belegnummer: string }) => `${d.belegartId}/${d.belegnummer}`;

export const SyncTourRequest = z
  .object({
    driver: z.object({ personalnummer: Int64, name: ErpText.trim().min(1), active: z.boolean().optional() }),
    tourDate: IsoDate,
    name: ErpText.optional(),
    deliveries: z.array(SyncDelivery).max(listLimits.deliveriesPerTour),
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
    deliveries: z.object({ created: z.number().int(), updated: z.number().int(), unchanged: z.number().int(), moved: z.number().int() }),
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

/** Answer of POST /admin/import-erp (snake_case like every admin answer). */
export const ImportSummary = z
  .object({
    run_id: Uuid,
    target_date: IsoDate,
    trigger: z.enum(['scheduler', 'startup', 'manual']),
    success: z.boolean(),
    skipped: z.boolean(),
    started_at: Timestamp,
    finished_at: Timestamp,
    tours: z.number().int(),
    tours_created: z.number().int(),
    deliveries_created: z.number().int(),
    deliveries_updated: z.number().int(),
    deliveries_unchanged: z.number().int(),
    deliveries_moved: z.number().int(),
    positions_created: z.number().int(),
    positions_updated: z.number().int(),
    positions_deleted: z.number().int(),
    error: z.string().nullable(),
  })
  .meta({ id: 'ImportSummary' });
export type ImportSummary = z.infer<typeof ImportSummary>;
