import { asc, eq, inArray, or, sql } from 'drizzle-orm';
import { erpSequence, isFinalDelivery, resyncSortOrders } from '../../../shared/rules/resync.js';
import { deliveryKey, type SyncTourRequest } from '../../../shared/schemas/tours.js';
import type { Db } from '../../db/client.js';
import { deliveries, tours } from '../../db/schema.js';
import type { DeliveryRow, TourRow } from '../../shapes/rows.js';
import type { MasterData } from './masterData.js';
import { checkSenderDeliveries, type TourSender } from './sender.js';
import type { FinalDelivery } from './ignoredChanges.js';
import { differs, insertAll, whenChanged } from './upserts.js';
import type { Withdrawal } from './withdrawals.js';

const deliveryMirror = [
  deliveries.tourId,
  deliveries.customerId,
  deliveries.sortOrder,
  deliveries.erpSequence,
  deliveries.erpOpenAmountCents,
  deliveries.paymentMethodId,
  deliveries.erpPaymentMethodCode,
  deliveries.paymentTerm,
  deliveries.assignedCarId,
];

export type DeliveryInput = SyncTourRequest['deliveries'][number];

/** An incoming delivery that is not final, with its row and owner as they were before the sync. */
export interface OpenDelivery {
  input: DeliveryInput;
  prev?: { delivery: DeliveryRow; accountId: number };
}

export interface SyncedDeliveries {
  /** The incoming deliveries the sync may change (new, or stored and neither completed nor canceled). */
  open: OpenDelivery[];
  /** The rows of the open deliveries after the sync, by delivery key. */
  current: Map<string, DeliveryRow>;
  written: DeliveryRow[];
  /** Open deliveries that were in another tour. */
  moved: OpenDelivery[];
  /** Stored deliveries the ERP sent with `withdrawn` (left alone here: withdrawals.ts decides). */
  withdrawals: Withdrawal[];
  /** Completed or canceled deliveries the ERP sent again (not written: ignoredChanges.ts tells whether they differ). */
  finals: FinalDelivery[];
}

/**
 * Locks the tour's deliveries and the incoming ones (wherever they are now) in id order, the same
 * row lock the event engine takes, so no driver event interleaves with the sync; then writes the
 * open ones where a mirrored column differs.
 */
export async function syncDeliveries(
  tx: Db,
  request: SyncTourRequest,
  tour: TourRow,
  sender: TourSender,
  master: MasterData,
): Promise<SyncedDeliveries> {
  const accountId = tour.accountId;
  // The owners are read after the lock, in a statement of its own: a concurrent sync may have moved
  // a delivery to a tour this statement's snapshot does not know, and a join in the locking
  // statement would drop such a row instead of waiting for it.
  const keyTuples = request.deliveries.map((d) => sql`(${d.belegartId}::integer, ${d.belegnummer}::text)`);
  const lockedRows = await tx
    .select()
    .from(deliveries)
    .where(
      or(
        eq(deliveries.tourId, tour.id),
        keyTuples.length ? sql`(${deliveries.belegartId}, ${deliveries.belegnummer}) IN (${sql.join(keyTuples, sql`, `)})` : undefined,
      ),
    )
    .orderBy(asc(deliveries.id))
    .for('update');
  const tourIds = [...new Set(lockedRows.map((d) => d.tourId))];
  const ownerRows = tourIds.length
    ? await tx.select({ id: tours.id, accountId: tours.accountId }).from(tours).where(inArray(tours.id, tourIds))
    : [];
  const accountOfTour = new Map(ownerRows.map((t) => [t.id, t.accountId]));
  const existingRows = lockedRows.map((delivery) => ({ delivery, accountId: accountOfTour.get(delivery.tourId)! }));
  const previous = new Map(existingRows.map((r) => [deliveryKey(r.delivery), r]));
  checkSenderDeliveries(request, previous, sender);

  const sent = request.deliveries.map((input, index) => ({
    input,
    prev: previous.get(deliveryKey(input)),
    erpSequence: erpSequence(input.sequence, index),
  }));
  // A withdrawn delivery is never created, nor written as the ERP sent it.
  const withdrawals = sent.filter((s): s is Withdrawal & typeof s => !!s.input.withdrawn && !!s.prev);
  const finals = sent.filter(
    (s): s is FinalDelivery & typeof s => !s.input.withdrawn && !!s.prev && isFinalDelivery(s.prev.delivery.state),
  );
  const withSequence = sent.filter(({ input, prev }) => !input.withdrawn && (!prev || !isFinalDelivery(prev.delivery.state)));
  // The upsert of the tour locked its row (even when it changed nothing), which a reorder takes
  // first to mark the tour: the mark read with it is current.
  const sortOrders = resyncSortOrders(
    withSequence.map(({ prev, erpSequence }) => ({
      erpSequence,
      sortOrder: prev && prev.delivery.tourId === tour.id ? prev.delivery.sortOrder : null,
    })),
    tour.orderedByDriverAt !== null,
    existingRows.filter((r) => r.delivery.tourId === tour.id).map((r) => r.delivery.sortOrder),
  );
  const deliveryValues = withSequence
    .map(({ input, prev, erpSequence }, i) => ({
      tourId: tour.id,
      belegartId: input.belegartId,
      belegnummer: input.belegnummer,
      customerId: master.customerId.get(input.customer.erpCustomerId)!,
      deliveryAddress: input.deliveryAddress,
      sortOrder: sortOrders[i],
      erpSequence,
      erpOpenAmountCents: input.openAmountCents,
      paymentMethodId: input.paymentMethodCode ? (master.methodId.get(input.paymentMethodCode) ?? null) : null,
      erpPaymentMethodCode: input.paymentMethodCode ?? null,
      paymentTerm: input.paymentTerm ?? null,
      // A car belongs to an account: it cannot follow a delivery to another driver.
      assignedCarId: prev && prev.accountId === accountId ? prev.delivery.assignedCarId : null,
    }))
    .sort((a, b) => deliveryKey(a).localeCompare(deliveryKey(b)));
  const toWrite = deliveryValues.filter((v) => differs(previous.get(deliveryKey(v))?.delivery, v, deliveryMirror));
  const written = await insertAll(toWrite, (chunk: typeof deliveryValues) =>
    tx
      .insert(deliveries)
      .values(chunk)
      .onConflictDoUpdate({
        target: [deliveries.belegartId, deliveries.belegnummer],
        ...whenChanged(deliveryMirror),
      })
      .returning(),
  );

  const open: OpenDelivery[] = withSequence.map(({ input, prev }) => ({ input, prev }));
  const current = new Map<string, DeliveryRow>([
    ...open.filter((o) => o.prev).map((o) => [deliveryKey(o.input), o.prev!.delivery] as const),
    ...written.map((d) => [deliveryKey(d), d] as const),
  ]);
  const missing = open.filter((o) => !current.has(deliveryKey(o.input)));
  if (missing.length) {
    // Another sync inserted these between our lock and our insert; its row stands.
    const rows = await tx
      .select()
      .from(deliveries)
      .where(
        sql`(${deliveries.belegartId}, ${deliveries.belegnummer}) IN (${sql.join(
          missing.map((o) => sql`(${o.input.belegartId}::integer, ${o.input.belegnummer}::text)`),
          sql`, `,
        )})`,
      )
      .for('update');
    for (const row of rows) current.set(deliveryKey(row), row);
  }
  const moved = open.filter((o) => o.prev && o.prev.delivery.tourId !== tour.id);
  return { open, current, written, moved, withdrawals, finals };
}
