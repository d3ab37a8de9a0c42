import { asc, desc, eq, inArray } from 'drizzle-orm';
import { isModified, isPositionModified, type ReviewPosition } from '../../shared/rules/review.js';
import type { AdminDeliveryDetails, DeliveryDetailsResponse } from '../../shared/schemas/admin.js';
import type { Db } from '../db/client.js';
import { accounts, completions, deliveries, deliveryItems, erpCancellations, services, tours } from '../db/schema.js';
import { notFound } from '../errors.js';
import { adminAddress, isoOrNull, iso, snakeKeys } from './adminShapes.js';
import { reviewStatuses } from './adminReviews.js';
import { loadDeliveryDetails } from '../shapes/tourDetails.js';

type CompletionRow = typeof completions.$inferSelect;

function adminCompletion(row: CompletionRow): AdminDeliveryDetails['completion'] {
  return {
    completed_at: iso(row.completedAt),
    account_id: row.accountId,
    author_car_id: row.authorCarId,
    payment_method_id: row.paymentMethodId,
    payment_id: row.paymentId,
    payment_collected: row.paymentCollected,
    collected_amount_cents: row.collectedAmountCents,
    notes_acknowledged: row.notesAcknowledged,
    acknowledged_note_ids: row.acknowledgedNoteIds,
    internal_note: row.internalNote,
    customer_signature_id: row.customerSignatureId,
    driver_signature_id: row.driverSignatureId,
    report_attachment_id: row.reportAttachmentId,
    erp_push: {
      status: row.erpPushStatus,
      attempts: row.erpPushAttempts,
      pushed_at: isoOrNull(row.erpPushedAt),
      error: row.erpPushError,
      next_attempt_at: isoOrNull(row.erpNextAttemptAt),
    },
  };
}

function adminCancellation(row: typeof erpCancellations.$inferSelect | undefined): AdminDeliveryDetails['cancellation'] {
  if (!row) return null;
  return {
    canceled_at: iso(row.canceledAt),
    reason: row.reason,
    erp_push: {
      status: row.pushStatus,
      attempts: row.pushAttempts,
      pushed_at: isoOrNull(row.pushedAt),
      error: row.pushError,
      next_attempt_at: isoOrNull(row.nextAttemptAt),
    },
  };
}

/**
 * Everything known about the deliveries with an ERP document number, whatever their state:
 * several deliveries share a number when their document kinds (belegart) differ, so all of
 * them are answered, newest tour first. A fixed number of queries, read from one snapshot.
 */
export function belegDetails(db: Db, belegnummer: string): Promise<DeliveryDetailsResponse> {
  return db.transaction(
    async (tx) => {
      const rows = await tx
        .select({ delivery: deliveries, tour: tours, driverName: accounts.name })
        .from(deliveries)
        .innerJoin(tours, eq(tours.id, deliveries.tourId))
        .innerJoin(accounts, eq(accounts.personalnummer, tours.accountId))
        .where(eq(deliveries.belegnummer, belegnummer))
        .orderBy(desc(tours.tourDate), desc(deliveries.createdAt), asc(deliveries.belegartId));
      if (rows.length === 0) throw notFound('Belegnummer');
      const ids = rows.map((r) => r.delivery.id);

      const bundle = await loadDeliveryDetails(tx, ids);
      const serviceIds = [...new Set(bundle.deliveries.flatMap((d) => d.serviceValues.map((v) => v.serviceId)))];
      const serviceRows = serviceIds.length ? await tx.select().from(services).where(inArray(services.id, serviceIds)) : [];
      const completionRows = await tx.select().from(completions).where(inArray(completions.deliveryId, ids));
      const cancellationRows = await tx.select().from(erpCancellations).where(inArray(erpCancellations.deliveryId, ids));
      const reviews = await reviewStatuses(
        tx,
        bundle.deliveries.map((d) => ({ id: d.id, creditAmountCents: d.credit?.amountCents ?? null, positions: d.positions })),
      );

      const serviceOf = new Map(serviceRows.map((s) => [s.id, s]));
      const completionOf = new Map(completionRows.map((c) => [c.deliveryId, c]));
      const cancellationOf = new Map(cancellationRows.map((c) => [c.deliveryId, c]));
      const customerOf = new Map(bundle.customers.map((c) => [c.id, c]));
      const articleOf = new Map(bundle.articles.map((a) => [a.id, a]));
      const warehouseOf = new Map(bundle.warehouses.map((w) => [w.id, w]));

      const details = rows.map(({ delivery: row, tour, driverName }, index): AdminDeliveryDetails => {
        const { positions, contacts, notes, serviceValues, latestPayment, attachments, pendingOnDevice, ...delivery } =
          bundle.deliveries[index];
        const articleIds = new Set(positions.map((p) => p.articleId));
        const articles = [...articleIds].map((id) => articleOf.get(id)!);
        const warehouseIds = new Set([...positions.map((p) => p.warehouseId), ...articles.map((a) => a.defaultWarehouseId)]);
        const adminContacts = contacts.map((c) => ({ ...snakeKeys(c), address: c.address && adminAddress(c.address) }));
        const customer = customerOf.get(row.customerId)!;
        const completion = completionOf.get(row.id);
        return {
          ...snakeKeys(delivery),
          tour: { id: tour.id, tour_date: tour.tourDate, name: tour.name, driver_personalnummer: tour.accountId, driver_name: driverName },
          delivery_address: adminAddress(delivery.deliveryAddress),
          mail_sent_at: isoOrNull(row.mailSentAt),
          positions_modified: isModified({ positions, creditAmountCents: row.creditAmountCents }),
          review: reviews.get(row.id)!,
          customer: { ...snakeKeys(customer), address: adminAddress(customer.address) },
          contact_person: adminContacts.find((c) => c.roles.includes('contact_person')) ?? null,
          contacts: adminContacts,
          positions: positions.map((p) => ({ ...snakeKeys(p), modified: isPositionModified(p) })),
          articles: articles.map(snakeKeys),
          warehouses: [...warehouseIds].flatMap((id) => (id && warehouseOf.has(id) ? [snakeKeys(warehouseOf.get(id)!)] : [])),
          notes: notes.map(snakeKeys),
          service_values: serviceValues.map((v) => {
            const service = serviceOf.get(v.serviceId)!;
            return { ...snakeKeys(v), service_key: service.key, service_name: service.name, service_kind: service.kind };
          }),
          latest_payment: latestPayment && snakeKeys(latestPayment),
          completion: completion ? adminCompletion(completion) : null,
          cancellation: adminCancellation(cancellationOf.get(row.id)),
          attachments: attachments.map(snakeKeys),
          pending_on_device: pendingOnDevice ? snakeKeys(pendingOnDevice) : null,
        };
      });
      return { belegnummer, deliveries: details };
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}

/** Whether any delivery with this number deviates from its document, in one query. */
export async function positionsModified(db: Db, belegnummer: string): Promise<boolean> {
  const rows = await db
    .select({
      id: deliveries.id,
      creditAmountCents: deliveries.creditAmountCents,
      state: deliveryItems.state,
      requiredQuantity: deliveryItems.requiredQuantity,
      creditedQuantity: deliveryItems.creditedQuantity,
    })
    .from(deliveries)
    .leftJoin(deliveryItems, eq(deliveryItems.deliveryId, deliveries.id))
    .where(eq(deliveries.belegnummer, belegnummer));
  if (rows.length === 0) throw notFound('Belegnummer');
  const byDelivery = new Map<string, { creditAmountCents: number | null; positions: ReviewPosition[] }>();
  for (const row of rows) {
    const entry = byDelivery.get(row.id) ?? { creditAmountCents: row.creditAmountCents, positions: [] };
    if (row.state !== null)
      entry.positions.push({ state: row.state, requiredQuantity: row.requiredQuantity!, creditedQuantity: row.creditedQuantity! });
    byDelivery.set(row.id, entry);
  }
  return [...byDelivery.values()].some(isModified);
}
