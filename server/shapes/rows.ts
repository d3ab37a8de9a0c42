import type { z } from 'zod';
import type { Attachment, Credit, Delivery, DeliveryItem, Note, Payment, ServiceValue } from '../../shared/schemas/deliveries.js';
import { openAmountCents } from '../../shared/rules/openAmount.js';
import type { Article, ContactSource, Customer, Tour, Warehouse } from '../../shared/schemas/tours.js';
import type * as schema from '../db/schema.js';

/** Row-to-API mappers: the one place where database rows become the public camelCase shapes. */

const iso = (d: Date) => d.toISOString();

export type DeliveryRow = typeof schema.deliveries.$inferSelect;
export function toCredit(row: DeliveryRow): Credit | null {
  if (row.creditAmountCents === null) return null;
  return { amountCents: row.creditAmountCents, reason: row.creditReason ?? '', updatedAt: iso(row.creditUpdatedAt ?? row.updatedAt) };
}

export type ItemRow = typeof schema.deliveryItems.$inferSelect;
/** `items` must be all positions of the delivery: the open amount depends on them. */
export function toDelivery(
  row: DeliveryRow,
  items: Pick<ItemRow, 'state' | 'requiredQuantity' | 'creditedQuantity' | 'unitPriceCents'>[],
): Delivery {
  return {
    id: row.id,
    tourId: row.tourId,
    belegartId: row.belegartId,
    belegnummer: row.belegnummer,
    customerId: row.customerId,
    deliveryAddress: row.deliveryAddress,
    state: row.state,
    stateReason: row.stateReason,
    sortOrder: row.sortOrder,
    paymentMethodId: row.paymentMethodId,
    paymentTerm: row.paymentTerm,
    assignedCarId: row.assignedCarId,
    erpOpenAmountCents: row.erpOpenAmountCents,
    openAmountCents: openAmountCents({
      erpOpenAmountCents: row.erpOpenAmountCents,
      creditAmountCents: row.creditAmountCents,
      positions: items,
    }),
    credit: toCredit(row),
    completedAt: row.completedAt ? iso(row.completedAt) : null,
    updatedAt: iso(row.updatedAt),
  };
}

export function toItem(row: ItemRow, scannable: boolean): DeliveryItem {
  return {
    id: row.id,
    deliveryId: row.deliveryId,
    lineNumber: row.lineNumber,
    articleId: row.articleId,
    warehouseId: row.warehouseId,
    requiredQuantity: row.requiredQuantity,
    scannedQuantity: row.scannedQuantity,
    creditedQuantity: row.creditedQuantity,
    state: row.state,
    scannable,
    unit: row.unit,
    unitPriceCents: row.unitPriceCents,
  };
}

export type NoteRow = typeof schema.notes.$inferSelect;
export function toNote(row: NoteRow, imageAttachmentId: string | null = null): Note {
  return {
    id: row.id,
    deliveryId: row.deliveryId,
    text: row.text,
    imageAttachment: row.imageAttachment,
    imageAttachmentId,
    authorCarId: row.authorCarId,
    creditDeliveryItemId: row.creditDeliveryItemId,
    isAmountCreditNote: row.isAmountCreditNote,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

export type PaymentRow = typeof schema.paymentProtocol.$inferSelect;
export function toPayment(row: PaymentRow): Payment {
  return {
    id: row.id,
    deliveryId: row.deliveryId,
    paymentMethodId: row.paymentMethodId,
    paymentMethodCode: row.paymentMethodCode,
    amountCents: row.amountCents,
    accountId: row.accountId,
    authorCarId: row.authorCarId,
    occurredAt: iso(row.occurredAt),
    receivedAt: iso(row.receivedAt),
  };
}

export type ServiceValueRow = typeof schema.deliveryServiceValues.$inferSelect;
export function toServiceValue(row: ServiceValueRow): ServiceValue {
  return {
    deliveryId: row.deliveryId,
    serviceId: row.serviceId,
    boolValue: row.boolValue,
    numericValue: row.numericValue,
    updatedAt: iso(row.updatedAt),
  };
}

export type AttachmentRow = typeof schema.attachments.$inferSelect;
/** The store reference stays internal: clients fetch attachments by id through GET /attachments/{id}. */
export function toAttachment(row: AttachmentRow): z.infer<typeof Attachment> {
  return {
    id: row.id,
    deliveryId: row.deliveryId,
    noteId: row.noteId,
    kind: row.kind,
    contentType: row.contentType,
    createdAt: iso(row.createdAt),
  };
}

// ---------- the tour aggregate's ERP mirror data ----------

export type TourRow = typeof schema.tours.$inferSelect;
export const toTour = (row: TourRow): z.infer<typeof Tour> => ({
  id: row.id,
  accountId: row.accountId,
  tourDate: row.tourDate,
  name: row.name,
});
export type CustomerRow = typeof schema.customers.$inferSelect;
export const toCustomer = (row: CustomerRow): z.infer<typeof Customer> => ({
  id: row.id,
  erpCustomerId: row.erpCustomerId,
  name: row.name,
  address: row.address,
});
export type WarehouseRow = typeof schema.warehouses.$inferSelect;
export const toWarehouse = (row: WarehouseRow): z.infer<typeof Warehouse> => ({ id: row.id, code: row.code, name: row.name });
export type ArticleRow = typeof schema.articles.$inferSelect;
export const toArticle = (row: ArticleRow): z.infer<typeof Article> => ({
  id: row.id,
  articleNumber: row.articleNumber,
  name: row.name,
  scannable: row.scannable,
  defaultWarehouseId: row.defaultWarehouseId,
});

export type ContactSourceRow = typeof schema.contactSources.$inferSelect;
export type ContactChannelRow = typeof schema.contactChannels.$inferSelect;
/** `channels` must be the source's channels; they are ordered by kind and ERP position here. */
export function toContactSource(row: ContactSourceRow, channels: ContactChannelRow[]): z.infer<typeof ContactSource> {
  const kindOrder = ['phone', 'mobile', 'email', 'web'];
  return {
    id: row.id,
    deliveryId: row.deliveryId,
    role: row.role,
    roles: row.roles,
    position: row.position,
    anrede: row.anrede,
    titel: row.titel,
    name1: row.name1,
    name2: row.name2,
    name3: row.name3,
    abteilung: row.abteilung,
    funktion: row.funktion,
    address: row.address,
    channels: [...channels]
      .sort((a, b) => kindOrder.indexOf(a.kind) - kindOrder.indexOf(b.kind) || a.position - b.position)
      .map((c) => ({ id: c.id, sourceId: c.sourceId, kind: c.kind, position: c.position, value: c.value })),
  };
}
