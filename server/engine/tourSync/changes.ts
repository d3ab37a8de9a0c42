import { and, eq, inArray, or } from 'drizzle-orm';
import { serviceValueChangeId } from '../../../shared/rules/services.js';
import type { ChangeData } from '../../../shared/schemas/sync.js';
import { deliveryKey } from '../../../shared/schemas/tours.js';
import type { Db } from '../../db/client.js';
import { articles, deliveries, deliveryItems, tours } from '../../db/schema.js';
import { loadDeliveryDetails } from '../../shapes/tourDetails.js';
import {
  toArticle,
  toContactSource,
  toCustomer,
  toDelivery,
  toItem,
  toWarehouse,
  type ArticleRow,
  type ContactChannelRow,
  type CustomerRow,
  type WarehouseRow,
} from '../../shapes/rows.js';
import type { ChangeRecord } from '../changeLog.js';
import type { SyncedContacts } from './contacts.js';
import type { SyncedDeliveries } from './deliveries.js';
import type { MasterData } from './masterData.js';
import type { SyncedPositions } from './positions.js';

const openDelivery = inArray(deliveries.state, ['active', 'held']);

/**
 * Changed master data for the other drivers whose open deliveries name it; the synced tour's
 * driver has it already. An ERP rename arrives with the first tour of an import that carries it,
 * and the syncs of the other tours then find nothing changed, so their drivers learn of it here.
 * The lines of an article whose `scannable` flipped are changed positions, wherever they are.
 */
async function masterDataForOthers(
  tx: Db,
  accountId: number,
  changed: {
    warehouses: WarehouseRow[];
    articles: ArticleRow[];
    customers: CustomerRow[];
    flipped: Set<string>;
    positionsWritten: Set<string>;
    /** Every warehouse of the synced tour: a changed article may now name one the others never had. */
    warehouseRows: WarehouseRow[];
  },
): Promise<ChangeRecord[]> {
  const warehouseById = new Map(changed.warehouses.map((w) => [w.id, w]));
  const articleById = new Map(changed.articles.map((a) => [a.id, a]));
  const customerById = new Map(changed.customers.map((c) => [c.id, c]));
  const readers = customerById.size
    ? await tx
        .selectDistinctOn([tours.accountId, deliveries.customerId], {
          accountId: tours.accountId,
          tourId: tours.id,
          customerId: deliveries.customerId,
        })
        .from(deliveries)
        .innerJoin(tours, eq(tours.id, deliveries.tourId))
        .where(and(openDelivery, inArray(deliveries.customerId, [...customerById.keys()])))
    : [];
  const lines =
    articleById.size || warehouseById.size
      ? await tx
          .select({
            item: deliveryItems,
            accountId: tours.accountId,
            tourId: tours.id,
            defaultWarehouseId: articles.defaultWarehouseId,
          })
          .from(deliveryItems)
          .innerJoin(deliveries, eq(deliveries.id, deliveryItems.deliveryId))
          .innerJoin(tours, eq(tours.id, deliveries.tourId))
          .innerJoin(articles, eq(articles.id, deliveryItems.articleId))
          .where(
            and(
              openDelivery,
              or(
                inArray(deliveryItems.articleId, [...articleById.keys()]),
                inArray(deliveryItems.warehouseId, [...warehouseById.keys()]),
                inArray(articles.defaultWarehouseId, [...warehouseById.keys()]),
              ),
            ),
          )
      : [];

  const records = new Map<string, ChangeRecord>();
  const add = (record: ChangeRecord) => records.set(`${record.entity}/${record.id}/${record.accountId}`, record);
  const forOther = <E extends 'customer' | 'article' | 'warehouse'>(
    reader: { accountId: number; tourId: string },
    entity: E,
    id: string,
    data: ChangeData[E],
  ) => {
    if (reader.accountId !== accountId)
      add({ entity, op: 'upsert', id, tourId: reader.tourId, accountId: reader.accountId, data } as ChangeRecord);
  };
  for (const r of readers) forOther(r, 'customer', r.customerId, toCustomer(customerById.get(r.customerId)!));
  const anyWarehouse = new Map(changed.warehouseRows.map((w) => [w.id, w]));
  for (const line of lines) {
    const article = articleById.get(line.item.articleId);
    if (article) forOther(line, 'article', article.id, toArticle(article));
    const newDefault = article?.defaultWarehouseId ? anyWarehouse.get(article.defaultWarehouseId) : undefined;
    if (newDefault) forOther(line, 'warehouse', newDefault.id, toWarehouse(newDefault));
    for (const id of [line.item.warehouseId, line.defaultWarehouseId]) {
      const warehouse = id ? warehouseById.get(id) : undefined;
      if (warehouse) forOther(line, 'warehouse', warehouse.id, toWarehouse(warehouse));
    }
    if (article && changed.flipped.has(article.id) && !changed.positionsWritten.has(line.item.id)) {
      add({
        entity: 'position',
        op: 'upsert',
        id: line.item.id,
        tourId: line.tourId,
        accountId: line.accountId,
        data: toItem(line.item, article.scannable),
      });
    }
  }
  return [...records.values()];
}

export interface SyncResult {
  tourId: string;
  accountId: number;
  master: MasterData;
  deliveries: SyncedDeliveries;
  positions: SyncedPositions;
  contacts: SyncedContacts;
  /** Deliveries whose row or lines were written. */
  touched: Set<string>;
}

/**
 * The change records of a sync, scoped to the tour's owner, plus the master data other drivers'
 * open deliveries name and, for a delivery that moved, the old owner's delete and all the
 * delivery holds for the new one.
 */
export async function syncChangeRecords(tx: Db, sync: SyncResult): Promise<ChangeRecord[]> {
  const { accountId, master, deliveries: synced, positions, contacts } = sync;
  const changes: ChangeRecord[] = [];
  const scope = { tourId: sync.tourId, accountId };
  const deliveryById = new Map([...synced.current.values()].map((d) => [d.id, d]));
  const ownerOf = (deliveryId: string) => ({ tourId: deliveryById.get(deliveryId)!.tourId, accountId });
  const arrived = synced.open
    .filter((o) => !o.prev || o.prev.delivery.tourId !== sync.tourId)
    .map((o) => synced.current.get(deliveryKey(o.input))!);

  // The driver receives the master data that what they receive names: all of a delivery that
  // arrives for the first time, and what written lines and deliveries name (a line may name an
  // article another driver's tour brought in, a delivery another customer).
  const namingLines = [...arrived.flatMap((d) => positions.byDelivery.get(d.id) ?? []), ...positions.written];
  const arrivedArticles = new Set(namingLines.map((i) => i.articleId));
  const arrivedWarehouses = new Set(
    namingLines.map((i) => i.warehouseId).concat([...arrivedArticles].map((id) => master.articleById.get(id)?.defaultWarehouseId ?? null)),
  );
  const arrivedCustomers = new Set([...arrived, ...synced.written].map((d) => d.customerId));
  const changedIds = new Set([...master.warehouses.changed, ...master.articles.changed, ...master.customers.changed].map((r) => r.id));
  for (const w of master.warehouses.rows)
    if (changedIds.has(w.id) || arrivedWarehouses.has(w.id))
      changes.push({ entity: 'warehouse', op: 'upsert', id: w.id, ...scope, data: toWarehouse(w) });
  for (const a of master.articles.rows)
    if (changedIds.has(a.id) || arrivedArticles.has(a.id))
      changes.push({ entity: 'article', op: 'upsert', id: a.id, ...scope, data: toArticle(a) });
  for (const c of master.customers.rows)
    if (changedIds.has(c.id) || arrivedCustomers.has(c.id))
      changes.push({ entity: 'customer', op: 'upsert', id: c.id, ...scope, data: toCustomer(c) });
  // Rows new in this sync are named by no other delivery yet.
  const changedExisting = {
    warehouses: master.warehouses.changed.filter((w) => master.warehouses.before.has(w.code)),
    articles: master.articles.changed.filter((a) => master.articles.before.has(a.articleNumber)),
    customers: master.customers.changed.filter((c) => master.customers.before.has(c.erpCustomerId)),
  };
  if (changedExisting.warehouses.length || changedExisting.articles.length || changedExisting.customers.length) {
    const flipped = new Set(
      changedExisting.articles.filter((a) => master.articles.before.get(a.articleNumber)!.scannable !== a.scannable).map((a) => a.id),
    );
    changes.push(
      ...(await masterDataForOthers(tx, accountId, {
        ...changedExisting,
        flipped,
        positionsWritten: new Set(positions.written.map((i) => i.id)),
        warehouseRows: master.warehouses.rows,
      })),
    );
  }

  for (const { prev } of synced.moved) {
    if (prev!.accountId !== accountId) {
      changes.push({ entity: 'delivery', op: 'delete', id: prev!.delivery.id, tourId: prev!.delivery.tourId, accountId: prev!.accountId });
    }
  }
  for (const id of sync.touched) {
    changes.push({
      entity: 'delivery',
      op: 'upsert',
      id,
      ...ownerOf(id),
      data: toDelivery(deliveryById.get(id)!, positions.byDelivery.get(id) ?? []),
    });
  }
  const scannable = (articleId: string) => master.articleById.get(articleId)?.scannable ?? true;
  for (const item of positions.written)
    changes.push({
      entity: 'position',
      op: 'upsert',
      id: item.id,
      ...ownerOf(item.deliveryId),
      data: toItem(item, scannable(item.articleId)),
    });
  for (const item of positions.deleted) changes.push({ entity: 'position', op: 'delete', id: item.id, ...ownerOf(item.deliveryId) });
  for (const source of contacts.deleted) changes.push({ entity: 'contact', op: 'delete', id: source.id, ...ownerOf(source.deliveryId) });
  const insertedChannelsOf = new Map<string, ContactChannelRow[]>();
  for (const c of contacts.insertedChannels) insertedChannelsOf.set(c.sourceId, [...(insertedChannelsOf.get(c.sourceId) ?? []), c]);
  for (const source of contacts.inserted) {
    changes.push({
      entity: 'contact',
      op: 'upsert',
      id: source.id,
      ...ownerOf(source.deliveryId),
      data: toContactSource(source, insertedChannelsOf.get(source.id) ?? []),
    });
  }

  if (synced.moved.length) {
    // The new owner gets the delivery's local work, which moved with it.
    const written = new Set([...positions.written.map((i) => i.id), ...contacts.inserted.map((s) => s.id)]);
    const bundle = await loadDeliveryDetails(
      tx,
      synced.moved.map((o) => synced.current.get(deliveryKey(o.input))!.id),
    );
    for (const d of bundle.deliveries) {
      const owner = ownerOf(d.id);
      for (const p of d.positions) if (!written.has(p.id)) changes.push({ entity: 'position', op: 'upsert', id: p.id, ...owner, data: p });
      for (const c of d.contacts) if (!written.has(c.id)) changes.push({ entity: 'contact', op: 'upsert', id: c.id, ...owner, data: c });
      for (const n of d.notes) changes.push({ entity: 'note', op: 'upsert', id: n.id, ...owner, data: n });
      for (const v of d.serviceValues)
        changes.push({ entity: 'serviceValue', op: 'upsert', id: serviceValueChangeId(v), ...owner, data: v });
      for (const a of d.attachments) changes.push({ entity: 'attachment', op: 'upsert', id: a.id, ...owner, data: a });
      if (d.latestPayment) changes.push({ entity: 'payment', op: 'upsert', id: d.latestPayment.id, ...owner, data: d.latestPayment });
    }
  }
  return changes;
}
