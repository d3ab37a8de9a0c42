import type { Credit, Delivery, DeliveryItem, Note, Payment, ServiceValue } from '../../shared/schemas/deliveries.js';
import { openAmountCents } from '../../shared/rules/openAmount.js';
import type { deliveries, deliveryItems, deliveryServiceValues, notes, paymentProtocol } from '../db/schema.js';

/** Row-to-API mappers: the one place where database rows become the public camelCase shapes. */

export type DeliveryRow = typeof deliveries.$inferSelect;
export type ItemRow = typeof deliveryItems.$inferSelect;
export type NoteRow = typeof notes.$inferSelect;
export type PaymentRow = typeof paymentProtocol.$inferSelect;
export type ServiceValueRow = typeof deliveryServiceValues.$inferSelect;

const iso = (d: Date) => d.toISOString();

export function toCredit(row: DeliveryRow): Credit | null {
  if (row.creditAmountCents === null) return null;
  return { amountCents: row.creditAmountCents, reason: row.creditReason ?? '', updatedAt: iso(row.creditUpdatedAt ?? row.updatedAt) };
}

/** `items` must be all positions of the delivery: the open amount depends on them. */
export function toDelivery(row: DeliveryRow, items: Pick<ItemRow, 'state' | 'requiredQuantity' | 'creditedQuantity' | 'unitPriceCents'>[]): Delivery {
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
    openAmountCents: openAmountCents({ erpOpenAmountCents: row.erpOpenAmountCents, creditAmountCents: row.creditAmountCents, positions: items }),
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

export function toServiceValue(row: ServiceValueRow): ServiceValue {
  return {
    deliveryId: row.deliveryId,
    serviceId: row.serviceId,
    boolValue: row.boolValue,
    numericValue: row.numericValue,
    updatedAt: iso(row.updatedAt),
  };
}
