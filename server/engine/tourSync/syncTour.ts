import { and, eq, getTableColumns, sql } from 'drizzle-orm';
import { deliveryKey, type SyncTourRequest, type SyncTourResponse } from '../../../shared/schemas/tours.js';
import type { Db } from '../../db/client.js';
import { accounts, tours } from '../../db/schema.js';
import { toTour, type TourRow } from '../../shapes/rows.js';
import { announceDeactivation, recordChanges, type ChangeRecord } from '../changeLog.js';
import { syncChangeRecords } from './changes.js';
import { syncContacts } from './contacts.js';
import { syncDeliveries } from './deliveries.js';
import { mirrorMasterData } from './masterData.js';
import { ignoredChanges } from './ignoredChanges.js';
import { syncPositions } from './positions.js';
import { checkSenderAccount, type TourSender } from './sender.js';
import { whenChanged } from './upserts.js';
import { withdrawDeliveries } from './withdrawals.js';

/**
 * Writes one ERP tour: account, tour, master data, deliveries, positions and contacts, in one
 * transaction with one set-based statement per table. Rows are written only where a column
 * differs, so an identical resend writes nothing and records no change. Local work (scans,
 * credits, notes, payments, service values, the driver's order) is never overwritten; see
 * docs/erp-integration.md for every rule and shared/rules/resync.ts for the decisions on lines and order.
 */
export function syncTour(db: Db, request: SyncTourRequest, sender: TourSender = { kind: 'any' }): Promise<SyncTourResponse> {
  return db.transaction(async (tx) => {
    const { driver } = request;
    const accountId = driver.personalnummer;
    await checkSenderAccount(tx, request, sender);

    const [accountWritten] = await tx
      .insert(accounts)
      .values({ personalnummer: accountId, name: driver.name, active: driver.active ?? true })
      .onConflictDoUpdate({
        target: accounts.personalnummer,
        ...whenChanged(driver.active === undefined ? [accounts.name] : [accounts.name, accounts.active]),
      })
      .returning({ active: accounts.active });
    if (accountWritten?.active === false) await announceDeactivation(tx, accountId);

    // Locks the tour's row even when it changes nothing: a reorder takes it first to mark the tour.
    const [upsertedTour] = await tx
      .insert(tours)
      .values({ accountId, tourDate: request.tourDate, name: request.name ?? null })
      .onConflictDoUpdate({
        target: [tours.accountId, tours.tourDate],
        ...whenChanged([tours.name]),
        ...(request.name === undefined ? { setWhere: sql`false` } : {}),
      })
      .returning({ ...getTableColumns(tours), inserted: sql<boolean>`(xmax = 0)` });
    const tour: TourRow =
      upsertedTour ??
      (
        await tx
          .select()
          .from(tours)
          .where(and(eq(tours.accountId, accountId), eq(tours.tourDate, request.tourDate)))
      )[0];
    const changes: ChangeRecord[] = [];
    if (upsertedTour) changes.push({ entity: 'tour', op: 'upsert', id: tour.id, tourId: tour.id, accountId, data: toTour(tour) });

    const master = await mirrorMasterData(tx, request);
    const synced = await syncDeliveries(tx, request, tour, sender, master);
    const positions = await syncPositions(tx, synced.open, synced.current, master);
    const contacts = await syncContacts(tx, synced.open, synced.current);
    const touched = new Set([
      ...synced.written.map((d) => d.id),
      ...positions.written.map((i) => i.deliveryId),
      ...positions.deleted.map((i) => i.deliveryId),
    ]);
    changes.push(
      ...(await syncChangeRecords(tx, { tourId: tour.id, accountId, master, deliveries: synced, positions, contacts, touched })),
    );
    const withdrawn = await withdrawDeliveries(tx, synced.withdrawals);
    changes.push(...withdrawn.changes);
    const ignored = await ignoredChanges(tx, synced.finals, tour.id, master);
    await recordChanges(tx, changes);

    const contactsChanged = new Set(contacts.replaced);
    const movedKeys = new Set(synced.moved.map((o) => deliveryKey(o.input)));
    const created = synced.open.filter((o) => !o.prev).length;
    const updated = synced.open
      .filter((o) => o.prev && !movedKeys.has(deliveryKey(o.input)))
      .map((o) => synced.current.get(deliveryKey(o.input))!.id)
      .filter((id) => touched.has(id) || contactsChanged.has(id)).length;
    const writtenNew = positions.written.filter((i) => !positions.before.has(i.id)).length;
    return {
      tour: toTour(tour),
      created: upsertedTour?.inserted === true,
      deliveries: {
        created,
        updated,
        unchanged:
          request.deliveries.length -
          created -
          updated -
          synced.moved.length -
          withdrawn.canceled.length -
          withdrawn.refused.length -
          ignored.length,
        moved: synced.moved.length,
        withdrawn: withdrawn.canceled.length,
        withdrawalsRefused: withdrawn.refused,
        changesIgnored: ignored,
      },
      positions: { created: writtenNew, updated: positions.written.length - writtenNew, deleted: positions.deleted.length },
    };
  });
}
