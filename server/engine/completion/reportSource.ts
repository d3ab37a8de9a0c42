import { asc, desc, eq, inArray } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import {
  accounts,
  articles,
  attachments,
  cars,
  completions,
  customers,
  deliveries,
  deliveryItems,
  deliveryServiceValues,
  notes,
  paymentMethods,
  paymentProtocol,
  services,
  tours,
} from '../../db/schema.js';
import type { DeliveryReportData } from '../../integrations/report/deliveryReport.js';
import { toDelivery } from '../../shapes/rows.js';

export type ReportSource = Omit<DeliveryReportData, 'companyName' | 'signatures'> & {
  signatureReferences: { customer: string; driver: string };
};

/** A value as jsonb gives it back: its Dates are ISO strings. */
type Stored<T> = T extends Date ? string : T extends object ? { [K in keyof T]: Stored<T[K]> } : T;

/**
 * What the delivery report of a completed delivery shows, without the signature bytes; undefined
 * when not completed. As the completion kept it (`completions.report_source`), so that a report
 * rendered late shows what was signed; a completion made before it was kept is read as it is now.
 */
export async function loadReportSource(db: Db, deliveryId: string): Promise<ReportSource | undefined> {
  const [completion] = await db.select({ kept: completions.reportSource }).from(completions).where(eq(completions.deliveryId, deliveryId));
  if (!completion) return undefined;
  return completion.kept ? revive(completion.kept as Stored<ReportSource>) : readReportSource(db, deliveryId);
}

function revive(kept: Stored<ReportSource>): ReportSource {
  return {
    ...kept,
    completedAt: new Date(kept.completedAt),
    payment: { ...kept.payment, loggedAt: kept.payment.loggedAt === null ? null : new Date(kept.payment.loggedAt) },
    notes: kept.notes.map((note) => ({ ...note, createdAt: new Date(note.createdAt) })),
    internalNote: kept.internalNote && { ...kept.internalNote, at: new Date(kept.internalNote.at) },
  };
}

/** The report's source from the data as it is now: what the completion keeps, in its transaction. */
export async function readReportSource(db: Db, deliveryId: string): Promise<ReportSource | undefined> {
  const [head] = await db
    .select({ completion: completions, delivery: deliveries, tour: tours, customer: customers, account: accounts })
    .from(completions)
    .innerJoin(deliveries, eq(deliveries.id, completions.deliveryId))
    .innerJoin(tours, eq(tours.id, deliveries.tourId))
    .innerJoin(customers, eq(customers.id, deliveries.customerId))
    .innerJoin(accounts, eq(accounts.personalnummer, completions.accountId))
    .where(eq(completions.deliveryId, deliveryId));
  if (!head) return undefined;
  const { completion, delivery } = head;
  const carId = completion.authorCarId ?? delivery.assignedCarId;

  // One after the other: in the completion's transaction they share one connection.
  const itemRows = await db
    .select({ item: deliveryItems, article: articles })
    .from(deliveryItems)
    .innerJoin(articles, eq(articles.id, deliveryItems.articleId))
    .where(eq(deliveryItems.deliveryId, deliveryId))
    .orderBy(asc(deliveryItems.lineNumber));
  const noteRows = await db.select().from(notes).where(eq(notes.deliveryId, deliveryId)).orderBy(asc(notes.createdAt));
  const serviceRows = await db
    .select({ value: deliveryServiceValues, service: services })
    .from(deliveryServiceValues)
    .innerJoin(services, eq(services.id, deliveryServiceValues.serviceId))
    .where(eq(deliveryServiceValues.deliveryId, deliveryId))
    .orderBy(asc(services.sortOrder), asc(services.name));
  const signatureRows = await db
    .select({ id: attachments.id, reference: attachments.reference })
    .from(attachments)
    .where(inArray(attachments.id, [completion.customerSignatureId, completion.driverSignatureId]));
  const [car] = carId ? await db.select({ plate: cars.plate }).from(cars).where(eq(cars.id, carId)) : [];
  const [method] = completion.paymentMethodId
    ? await db.select().from(paymentMethods).where(eq(paymentMethods.id, completion.paymentMethodId))
    : [];
  const [payment] = completion.paymentId
    ? await db.select().from(paymentProtocol).where(eq(paymentProtocol.id, completion.paymentId)).orderBy(desc(paymentProtocol.receivedAt))
    : [];
  const reference = (id: string) => signatureRows.find((r) => r.id === id)!.reference;
  const items = itemRows.map((r) => r.item);
  const carPlate = car?.plate ?? null;

  return {
    belegnummer: delivery.belegnummer,
    belegartId: delivery.belegartId,
    tourDate: head.tour.tourDate,
    tourName: head.tour.name,
    completedAt: completion.completedAt,
    customer: { name: head.customer.name, erpCustomerId: head.customer.erpCustomerId, address: head.customer.address },
    deliveryAddress: delivery.deliveryAddress,
    driver: { name: head.account.name, personalnummer: head.account.personalnummer },
    carPlate,
    positions: itemRows.map(({ item, article }) => {
      const removed = item.state === 'Removed' ? item.requiredQuantity - item.creditedQuantity : 0;
      return {
        lineNumber: item.lineNumber,
        articleNumber: article.articleNumber,
        articleName: article.name,
        unit: item.unit,
        ordered: item.requiredQuantity,
        delivered: item.requiredQuantity - item.creditedQuantity - removed,
        credited: item.creditedQuantity,
        removed,
        state: item.state,
        scannable: article.scannable,
      };
    }),
    credit: delivery.creditAmountCents === null ? null : { amountCents: delivery.creditAmountCents, reason: delivery.creditReason ?? '' },
    payment: {
      methodName: method?.name ?? null,
      methodCode: method?.code ?? payment?.paymentMethodCode ?? delivery.erpPaymentMethodCode,
      paymentTerm: delivery.paymentTerm,
      erpOpenAmountCents: delivery.erpOpenAmountCents,
      openAmountCents: toDelivery(delivery, items).openAmountCents,
      collectedAmountCents: completion.collectedAmountCents,
      loggedAt: payment?.occurredAt ?? null,
    },
    serviceValues: serviceRows.map(({ value, service }) => ({
      name: service.name,
      value: service.kind === 'boolean' ? (value.boolValue ? 'Ja' : 'Nein') : String(value.numericValue ?? '–'),
    })),
    notes: noteRows.map((n) => ({ text: n.text, hasImage: Boolean(n.imageAttachment), createdAt: n.createdAt })),
    internalNote: completion.internalNote
      ? { text: completion.internalNote, at: completion.completedAt, driver: head.account.name, carPlate }
      : null,
    signatureReferences: { customer: reference(completion.customerSignatureId), driver: reference(completion.driverSignatureId) },
  };
}
