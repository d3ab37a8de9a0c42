import { randomUUID } from 'node:crypto';
import { and, asc, eq, getTableColumns, inArray, notExists, or, sql, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import { mergeContacts, type MergedContact } from '../../shared/rules/contacts.js';
import { settledState } from '../../shared/rules/items.js';
import { serviceValueChangeId } from '../../shared/rules/services.js';
import type { Address } from '../../shared/schemas/common.js';
import { deliveryKey, type SyncTourRequest, type SyncTourResponse } from '../../shared/schemas/tours.js';
import type { Db } from '../db/client.js';
import {
  accounts, articles, contactChannels, contactSources, customers, deliveries, deliveryItems, notes, paymentMethods,
  scanAudit, tours, warehouses,
} from '../db/schema.js';
import { loadDeliveryDetails } from '../shapes/tourDetails.js';
import {
  toArticle, toContactSource, toCustomer, toDelivery, toItem, toTour, toWarehouse, type ArticleRow, type ContactChannelRow,
  type ContactSourceRow, type CustomerRow, type DeliveryRow, type ItemRow, type WarehouseRow,
} from '../shapes/rows.js';
import { announceDeactivation, recordChanges, type ChangeRecord } from './changeLog.js';
import { checkSenderAccount, checkSenderDeliveries, type TourSender } from './tourSender.js';

const now = sql`now()`;
const excluded = (column: PgColumn) => sql.raw(`excluded."${column.name}"`);

const columnKeys = new WeakMap<PgColumn[], string[]>();

/** The property names of table columns in drizzle rows. */
function keysOf(columns: PgColumn[]): string[] {
  let keys = columnKeys.get(columns);
  if (!keys) {
    const keyOf = new Map(Object.entries(getTableColumns(columns[0].table)).map(([key, column]) => [column as PgColumn, key]));
    keys = columns.map((column) => keyOf.get(column)!);
    columnKeys.set(columns, keys);
  }
  return keys;
}

/** `set` and `setWhere` of an upsert that writes (and returns) a row only when one of the columns differs. */
function whenChanged(columns: PgColumn[]): { set: Record<string, SQL>; setWhere: SQL } {
  const set: Record<string, SQL> = { updatedAt: now };
  for (const [i, key] of keysOf(columns).entries()) set[key] = excluded(columns[i]);
  const currentValues = sql.join(columns.map((c) => sql`${c}`), sql`, `);
  const incoming = sql.join(columns.map(excluded), sql`, `);
  return { set, setWhere: sql`(${currentValues}) IS DISTINCT FROM (${incoming})` };
}

/** Equal as stored: objects (addresses) compared by content, whatever their key order. */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!a || !b || typeof a !== 'object' || typeof b !== 'object') return (a ?? null) === (b ?? null);
  const canonical = (v: object) => JSON.stringify(v, Object.keys(v).sort());
  return canonical(a) === canonical(b);
}

/** Whether an incoming row needs a write: there is no stored one, or it differs in one of the columns. */
function differs(stored: object | undefined, incoming: object, columns: PgColumn[]): boolean {
  return !stored || keysOf(columns).some((key) => !sameValue((stored as Record<string, unknown>)[key], (incoming as Record<string, unknown>)[key]));
}

/** Several hundred rows per statement keep far below PostgreSQL's limit of 65535 parameters. */
function chunks<T>(rows: T[], size = 500): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}

async function insertAll<T>(rows: unknown[], write: (chunk: never[]) => Promise<T[]>): Promise<T[]> {
  const out: T[] = [];
  for (const chunk of chunks(rows)) out.push(...await write(chunk as never[]));
  return out;
}

/** Last occurrence wins, sorted by key so concurrent syncs lock shared rows in the same order. */
function byKey<T, K extends string | number>(rows: T[], key: (row: T) => K): T[] {
  const map = new Map<K, T>();
  for (const row of rows) map.set(key(row), row);
  return [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
}

/**
 * Upserts master data by key, writing only rows that are new or differ in `columns` from what is
 * stored: an unchanged row is neither written nor locked, so imports of tours sharing a catalogue
 * do not queue behind each other's row locks. Answers every row, the ones written and, by key,
 * the rows as they were stored before.
 */
async function upsertChanged<In extends object, Row extends In, K extends string | number>(
  input: In[], keyOf: (row: In) => K, columns: PgColumn[],
  load: (keys: K[]) => Promise<Row[]>, write: (rows: In[]) => Promise<Row[]>,
): Promise<{ rows: Row[]; changed: Row[]; before: Map<K, Row> }> {
  if (input.length === 0) return { rows: [], changed: [], before: new Map() };
  const rows = new Map((await load(input.map(keyOf))).map((row) => [keyOf(row), row]));
  const before = new Map(rows);
  const toWrite = input.filter((incoming) => differs(rows.get(keyOf(incoming)), incoming, columns));
  const changed = await insertAll(toWrite, write as (chunk: never[]) => Promise<Row[]>);
  for (const row of changed) rows.set(keyOf(row), row);
  // A row another import inserted with the same values meanwhile is not returned by our upsert.
  const missing = input.map(keyOf).filter((key) => !rows.has(key));
  if (missing.length) for (const row of await load(missing)) rows.set(keyOf(row), row);
  return { rows: [...rows.values()], changed, before };
}

// The columns each upsert mirrors from the ERP; anything else on the row is the driver's or the server's.
const warehouseMirror = [warehouses.name];
const articleMirror = [articles.name, articles.scannable, articles.defaultWarehouseId];
const customerMirror = [customers.name, customers.address];
const deliveryMirror = [
  deliveries.tourId, deliveries.customerId, deliveries.sortOrder, deliveries.erpSequence, deliveries.erpOpenAmountCents,
  deliveries.paymentMethodId, deliveries.erpPaymentMethodCode, deliveries.paymentTerm, deliveries.assignedCarId,
];
const itemMirror = [deliveryItems.articleId, deliveryItems.warehouseId, deliveryItems.requiredQuantity, deliveryItems.unit, deliveryItems.unitPriceCents, deliveryItems.state];


function addressKey(address: Address | null) {
  return address && [address.street, address.houseNumber, address.postalCode, address.city, address.country, address.addition ?? null];
}

/** Stored and incoming contacts compared by content, so an unchanged resend keeps their ids. */
function contactsKey(contacts: (Omit<MergedContact, 'channels'> & { channels: { kind: string; position: number; value: string }[] })[]) {
  return JSON.stringify([...contacts].sort((a, b) => a.position - b.position).map((c) => [
    c.role, c.roles, c.position, c.anrede, c.titel, c.name1, c.name2, c.name3, c.abteilung, c.funktion, addressKey(c.address),
    [...c.channels].sort((a, b) => a.kind.localeCompare(b.kind) || a.position - b.position).map((ch) => [ch.kind, ch.position, ch.value]),
  ]));
}

const isFinal = (state: DeliveryRow['state']) => state === 'completed' || state === 'canceled';

const openDelivery = inArray(deliveries.state, ['active', 'held']);

/**
 * Changed master data for the other drivers whose open deliveries name it; the synced tour's
 * driver has it already. An ERP rename arrives with the first tour of an import that carries it,
 * and the syncs of the other tours then find nothing changed, so their drivers learn of it here.
 * The lines of an article whose `scannable` flipped are changed positions, wherever they are.
 */
async function masterDataForOthers(tx: Db, accountId: number, changed: {
  warehouses: WarehouseRow[]; articles: ArticleRow[]; customers: CustomerRow[]; flipped: Set<string>; positionsWritten: Set<string>;
  /** Every warehouse of the synced tour: a changed article may now name one the others never had. */
  warehouseRows: WarehouseRow[];
}): Promise<ChangeRecord[]> {
  const warehouseById = new Map(changed.warehouses.map((w) => [w.id, w]));
  const articleById = new Map(changed.articles.map((a) => [a.id, a]));
  const customerById = new Map(changed.customers.map((c) => [c.id, c]));
  const readers = customerById.size ? await tx.selectDistinctOn([tours.accountId, deliveries.customerId], {
    accountId: tours.accountId, tourId: tours.id, customerId: deliveries.customerId,
  }).from(deliveries).innerJoin(tours, eq(tours.id, deliveries.tourId))
    .where(and(openDelivery, inArray(deliveries.customerId, [...customerById.keys()]))) : [];
  const lines = articleById.size || warehouseById.size ? await tx.select({
    item: deliveryItems, accountId: tours.accountId, tourId: tours.id, defaultWarehouseId: articles.defaultWarehouseId,
  }).from(deliveryItems)
    .innerJoin(deliveries, eq(deliveries.id, deliveryItems.deliveryId))
    .innerJoin(tours, eq(tours.id, deliveries.tourId))
    .innerJoin(articles, eq(articles.id, deliveryItems.articleId))
    .where(and(openDelivery, or(
      inArray(deliveryItems.articleId, [...articleById.keys()]),
      inArray(deliveryItems.warehouseId, [...warehouseById.keys()]),
      inArray(articles.defaultWarehouseId, [...warehouseById.keys()]),
    ))) : [];

  const records = new Map<string, ChangeRecord>();
  const add = (record: ChangeRecord) => records.set(`${record.entity}/${record.id}/${record.accountId}`, record);
  const forOther = (reader: { accountId: number; tourId: string }, entity: string, id: string, data: unknown) => {
    if (reader.accountId !== accountId) add({ entity, op: 'upsert', id, tourId: reader.tourId, accountId: reader.accountId, data });
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
      add({ entity: 'position', op: 'upsert', id: line.item.id, tourId: line.tourId, accountId: line.accountId, data: toItem(line.item, article.scannable) });
    }
  }
  return [...records.values()];
}

/**
 * Writes one ERP tour: account, tour, master data, deliveries, positions and contacts, in one
 * transaction with one set-based statement per table. Rows are written only where a column
 * differs, so an identical resend writes nothing and records no change. Local work (scans,
 * credits, notes, payments, service values, the driver's order) is never overwritten; see the
 * docs/erp-import.md for every rule.
 */
export function syncTour(db: Db, request: SyncTourRequest, sender: TourSender = { kind: 'any' }): Promise<SyncTourResponse> {
  return db.transaction(async (tx) => {
    const { driver } = request;
    const accountId = driver.personalnummer;
    const changes: ChangeRecord[] = [];
    await checkSenderAccount(tx, request, sender);

    const [accountWritten] = await tx.insert(accounts).values({ personalnummer: accountId, name: driver.name, active: driver.active ?? true })
      .onConflictDoUpdate({
        target: accounts.personalnummer,
        ...whenChanged(driver.active === undefined ? [accounts.name] : [accounts.name, accounts.active]),
      }).returning({ active: accounts.active });
    if (accountWritten?.active === false) await announceDeactivation(tx, accountId);

    const [upsertedTour] = await tx.insert(tours).values({ accountId, tourDate: request.tourDate, name: request.name ?? null })
      .onConflictDoUpdate({
        target: [tours.accountId, tours.tourDate],
        ...whenChanged([tours.name]),
        ...(request.name === undefined ? { setWhere: sql`false` } : {}),
      })
      .returning({ ...getTableColumns(tours), inserted: sql<boolean>`(xmax = 0)` });
    const tour = upsertedTour ?? (await tx.select().from(tours).where(and(eq(tours.accountId, accountId), eq(tours.tourDate, request.tourDate))))[0];
    const tourCreated = upsertedTour?.inserted === true;
    const scope = { tourId: tour.id, accountId };
    if (upsertedTour) changes.push({ entity: 'tour', op: 'upsert', id: tour.id, ...scope, data: toTour(tour) });

    // ---------- ERP mirror data ----------
    const positionsIn = request.deliveries.flatMap((d) => d.positions);
    const warehouseInput = byKey([
      ...positionsIn.map((p) => p.article.defaultWarehouse), ...positionsIn.map((p) => p.warehouse),
    ].filter((w) => !!w), (w) => w.code);
    const { rows: warehouseRows, changed: changedWarehouses, before: warehousesBefore } = await upsertChanged(warehouseInput, (w) => w.code, warehouseMirror,
      (codes) => tx.select().from(warehouses).where(inArray(warehouses.code, codes)),
      (chunk) => tx.insert(warehouses).values(chunk).onConflictDoUpdate({ target: warehouses.code, ...whenChanged(warehouseMirror) }).returning());
    const warehouseId = new Map(warehouseRows.map((w) => [w.code, w.id]));

    const articleInput = byKey(positionsIn.map((p) => p.article), (a) => a.articleNumber).map((a) => ({
      articleNumber: a.articleNumber, name: a.name, scannable: a.scannable,
      defaultWarehouseId: a.defaultWarehouse ? warehouseId.get(a.defaultWarehouse.code)! : null,
    }));
    const { rows: articleRows, changed: changedArticles, before: articlesBefore } = await upsertChanged(articleInput, (a) => a.articleNumber, articleMirror,
      (numbers) => tx.select().from(articles).where(inArray(articles.articleNumber, numbers)),
      (chunk) => tx.insert(articles).values(chunk).onConflictDoUpdate({
        target: articles.articleNumber, ...whenChanged(articleMirror),
      }).returning());
    const articleByNumber = new Map(articleRows.map((a) => [a.articleNumber, a]));
    const articleById = new Map(articleRows.map((a) => [a.id, a]));

    const customerInput = byKey(request.deliveries.map((d) => d.customer), (c) => c.erpCustomerId);
    const { rows: customerRows, changed: changedCustomers, before: customersBefore } = await upsertChanged(customerInput, (c) => c.erpCustomerId, customerMirror,
      (ids) => tx.select().from(customers).where(inArray(customers.erpCustomerId, ids)),
      (chunk) => tx.insert(customers).values(chunk).onConflictDoUpdate({ target: customers.erpCustomerId, ...whenChanged(customerMirror) }).returning());
    const customerId = new Map(customerRows.map((c) => [c.erpCustomerId, c.id]));

    const codes = [...new Set(request.deliveries.map((d) => d.paymentMethodCode).filter((c): c is string => !!c))];
    const methodRows = codes.length ? await tx.select({ id: paymentMethods.id, code: paymentMethods.code }).from(paymentMethods).where(inArray(paymentMethods.code, codes)) : [];
    const methodId = new Map(methodRows.map((m) => [m.code, m.id]));

    // ---------- deliveries ----------
    // Locks the tour's deliveries and the incoming ones (wherever they are now) in id order, the
    // same row lock the event engine takes, so no driver event interleaves with the sync.
    // The owners are read after the lock, in a statement of its own: a concurrent sync may have moved
    // a delivery to a tour this statement's snapshot does not know, and a join in the locking
    // statement would drop such a row instead of waiting for it.
    const keyTuples = request.deliveries.map((d) => sql`(${d.belegartId}::integer, ${d.belegnummer}::text)`);
    const lockedRows = await tx.select().from(deliveries)
      .where(or(eq(deliveries.tourId, tour.id), keyTuples.length ? sql`(${deliveries.belegartId}, ${deliveries.belegnummer}) IN (${sql.join(keyTuples, sql`, `)})` : undefined))
      .orderBy(asc(deliveries.id))
      .for('update');
    const tourIds = [...new Set(lockedRows.map((d) => d.tourId))];
    const ownerRows = tourIds.length ? await tx.select({ id: tours.id, accountId: tours.accountId }).from(tours).where(inArray(tours.id, tourIds)) : [];
    const accountOfTour = new Map(ownerRows.map((t) => [t.id, t.accountId]));
    const existingRows = lockedRows.map((delivery) => ({ delivery, accountId: accountOfTour.get(delivery.tourId)! }));
    const previous = new Map(existingRows.map((r) => [deliveryKey(r.delivery), r]));
    checkSenderDeliveries(request, previous, sender);
    const inTour = existingRows.filter((r) => r.delivery.tourId === tour.id).map((r) => r.delivery);
    // The tour follows the ERP's order until the driver reorders it (PUT delivery-order). The
    // upsert above locked the tour's row (even when it changed nothing), which a reorder takes
    // first to mark the tour: the mark read with it is current.
    const ownOrder = tour.orderedByDriverAt !== null;
    let nextAppended = Math.max(-1, ...inTour.map((d) => d.sortOrder)) + 1;

    const open = request.deliveries.map((d, index) => ({ input: d, index, prev: previous.get(deliveryKey(d)) }))
      .filter(({ prev }) => !prev || !isFinal(prev.delivery.state));
    const deliveryValues = open.map(({ input, index, prev }) => {
      const erpSequence = input.sequence ?? index;
      const arriving = !prev || prev.delivery.tourId !== tour.id;
      const sortOrder = !ownOrder ? erpSequence : arriving ? nextAppended++ : prev!.delivery.sortOrder;
      const sameOwner = prev && prev.accountId === accountId;
      return {
        tourId: tour.id,
        belegartId: input.belegartId,
        belegnummer: input.belegnummer,
        customerId: customerId.get(input.customer.erpCustomerId)!,
        deliveryAddress: input.deliveryAddress,
        sortOrder,
        erpSequence,
        erpOpenAmountCents: input.openAmountCents,
        paymentMethodId: input.paymentMethodCode ? methodId.get(input.paymentMethodCode) ?? null : null,
        erpPaymentMethodCode: input.paymentMethodCode ?? null,
        paymentTerm: input.paymentTerm ?? null,
        // A car belongs to an account: it cannot follow a delivery to another driver.
        assignedCarId: sameOwner ? prev!.delivery.assignedCarId : null,
      };
    }).sort((a, b) => deliveryKey(a).localeCompare(deliveryKey(b)));
    const deliveriesToWrite = deliveryValues.filter((v) => differs(previous.get(deliveryKey(v))?.delivery, v, deliveryMirror));
    const writtenDeliveries = await insertAll(deliveriesToWrite, (chunk: typeof deliveryValues) =>
      tx.insert(deliveries).values(chunk).onConflictDoUpdate({
        target: [deliveries.belegartId, deliveries.belegnummer],
        ...whenChanged(deliveryMirror),
      }).returning());
    const current = new Map<string, DeliveryRow>([
      ...open.filter((o) => o.prev).map((o) => [deliveryKey(o.input), o.prev!.delivery] as const),
      ...writtenDeliveries.map((d) => [deliveryKey(d), d] as const),
    ]);
    const missing = open.filter((o) => !current.has(deliveryKey(o.input)));
    if (missing.length) {
      // Another sync inserted these between our lock and our insert; its row stands.
      const rows = await tx.select().from(deliveries)
        .where(sql`(${deliveries.belegartId}, ${deliveries.belegnummer}) IN (${sql.join(missing.map((o) => sql`(${o.input.belegartId}::integer, ${o.input.belegnummer}::text)`), sql`, `)})`)
        .for('update');
      for (const row of rows) current.set(deliveryKey(row), row);
    }
    const openIds = open.map((o) => current.get(deliveryKey(o.input))!.id);

    // ---------- positions ----------
    const itemRows = openIds.length ? await tx.select().from(deliveryItems).where(inArray(deliveryItems.deliveryId, openIds)) : [];
    const itemsOf = new Map<string, Map<number, ItemRow>>();
    for (const item of itemRows) {
      if (!itemsOf.has(item.deliveryId)) itemsOf.set(item.deliveryId, new Map());
      itemsOf.get(item.deliveryId)!.set(item.lineNumber, item);
    }
    const itemValues = open.flatMap(({ input }) => {
      const deliveryId = current.get(deliveryKey(input))!.id;
      return input.positions.map((p) => {
        const prev = itemsOf.get(deliveryId)?.get(p.lineNumber);
        const requiredQuantity = p.quantity;
        // Scans and credits stay; only a changed quantity moves the line's state, by the scan rules.
        const state = !prev ? 'InProgress' as const
          : prev.requiredQuantity === requiredQuantity || prev.state === 'Removed' || prev.state === 'Held' ? prev.state
            : settledState({ requiredQuantity, creditedQuantity: prev.creditedQuantity, scannedQuantity: prev.scannedQuantity });
        return {
          deliveryId, lineNumber: p.lineNumber,
          articleId: articleByNumber.get(p.article.articleNumber)!.id,
          warehouseId: p.warehouse ? warehouseId.get(p.warehouse.code)! : null,
          requiredQuantity, unit: p.unit ?? null, unitPriceCents: p.unitPriceCents ?? null, state,
        };
      });
    }).sort((a, b) => a.deliveryId.localeCompare(b.deliveryId) || a.lineNumber - b.lineNumber);
    const itemsToWrite = itemValues.filter((v) => differs(itemsOf.get(v.deliveryId)?.get(v.lineNumber), v, itemMirror));
    const writtenItems = await insertAll(itemsToWrite, (chunk: typeof itemValues) =>
      tx.insert(deliveryItems).values(chunk).onConflictDoUpdate({
        target: [deliveryItems.deliveryId, deliveryItems.lineNumber],
        ...whenChanged(itemMirror),
      }).returning());

    // Lines the ERP no longer sends go only when nothing was done with them; worked lines stay.
    const sentLines = new Set(itemValues.map((v) => `${v.deliveryId}/${v.lineNumber}`));
    const untouched = itemRows.filter((i) => !sentLines.has(`${i.deliveryId}/${i.lineNumber}`)
      && i.scannedQuantity === 0 && i.creditedQuantity === 0 && i.state !== 'Removed' && i.state !== 'Held');
    const deletedItems = untouched.length ? await tx.delete(deliveryItems).where(and(
      inArray(deliveryItems.id, untouched.map((i) => i.id)),
      notExists(tx.select({ one: sql`1` }).from(scanAudit).where(eq(scanAudit.deliveryItemId, deliveryItems.id))),
      notExists(tx.select({ one: sql`1` }).from(notes).where(eq(notes.creditDeliveryItemId, deliveryItems.id))),
    )).returning() : [];

    const itemsBefore = new Set(itemRows.map((i) => i.id));
    const itemsNow = new Map(itemRows.map((i) => [i.id, i]));
    for (const item of writtenItems) itemsNow.set(item.id, item);
    for (const item of deletedItems) itemsNow.delete(item.id);
    const itemsByDelivery = new Map<string, ItemRow[]>();
    for (const item of itemsNow.values()) {
      if (!itemsByDelivery.has(item.deliveryId)) itemsByDelivery.set(item.deliveryId, []);
      itemsByDelivery.get(item.deliveryId)!.push(item);
    }

    // ---------- contacts ----------
    const sourceRows = openIds.length ? await tx.select().from(contactSources).where(inArray(contactSources.deliveryId, openIds)) : [];
    const channelRows = sourceRows.length
      ? await tx.select().from(contactChannels).where(inArray(contactChannels.sourceId, sourceRows.map((s) => s.id))) : [];
    const channelsOf = new Map<string, ContactChannelRow[]>();
    for (const c of channelRows) channelsOf.set(c.sourceId, [...(channelsOf.get(c.sourceId) ?? []), c]);
    const sourcesOf = new Map<string, ContactSourceRow[]>();
    for (const s of sourceRows) sourcesOf.set(s.deliveryId, [...(sourcesOf.get(s.deliveryId) ?? []), s]);

    const replaced: string[] = [];
    const newSources: (typeof contactSources.$inferInsert & { id: string })[] = [];
    const newChannels: (typeof contactChannels.$inferInsert)[] = [];
    for (const { input } of open) {
      const deliveryId = current.get(deliveryKey(input))!.id;
      const merged = mergeContacts(input.contacts);
      const stored = (sourcesOf.get(deliveryId) ?? []).map((s) => ({ ...s, channels: channelsOf.get(s.id) ?? [] }));
      if (contactsKey(stored) === contactsKey(merged)) continue;
      replaced.push(deliveryId);
      for (const contact of merged) {
        const { channels, ...fields } = contact;
        const id = randomUUID();
        newSources.push({ id, deliveryId, ...fields });
        newChannels.push(...channels.map((ch) => ({ sourceId: id, ...ch })));
      }
    }
    const deletedSources = replaced.length
      ? await tx.delete(contactSources).where(inArray(contactSources.deliveryId, replaced)).returning({ id: contactSources.id, deliveryId: contactSources.deliveryId }) : [];
    const insertedSources = await insertAll(newSources, (chunk: typeof newSources) => tx.insert(contactSources).values(chunk).returning());
    const insertedChannels = await insertAll(newChannels, (chunk: typeof newChannels) => tx.insert(contactChannels).values(chunk).returning());

    // ---------- change records ----------
    const deliveryById = new Map([...current.values()].map((d) => [d.id, d]));
    const ownerOf = (deliveryId: string) => ({ tourId: deliveryById.get(deliveryId)!.tourId, accountId });
    const arrived = open.filter((o) => !o.prev || o.prev.delivery.tourId !== tour.id).map((o) => current.get(deliveryKey(o.input))!);
    const moved = open.filter((o) => o.prev && o.prev.delivery.tourId !== tour.id);
    const movedRows = moved.map((o) => current.get(deliveryKey(o.input))!);

    // The driver receives the master data that what they receive names: all of a delivery that
    // arrives for the first time, and what written lines and deliveries name (a line may name an
    // article another driver's tour brought in, a delivery another customer).
    const namingLines = [...arrived.flatMap((d) => itemsByDelivery.get(d.id) ?? []), ...writtenItems];
    const arrivedArticles = new Set(namingLines.map((i) => i.articleId));
    const arrivedWarehouses = new Set(namingLines.map((i) => i.warehouseId)
      .concat([...arrivedArticles].map((id) => articleById.get(id)?.defaultWarehouseId ?? null)));
    const arrivedCustomers = new Set([...arrived, ...writtenDeliveries].map((d) => d.customerId));
    const changedIds = new Set([...changedWarehouses, ...changedArticles, ...changedCustomers].map((r) => r.id));
    for (const w of warehouseRows) if (changedIds.has(w.id) || arrivedWarehouses.has(w.id)) changes.push({ entity: 'warehouse', op: 'upsert', id: w.id, ...scope, data: toWarehouse(w) });
    for (const a of articleRows) if (changedIds.has(a.id) || arrivedArticles.has(a.id)) changes.push({ entity: 'article', op: 'upsert', id: a.id, ...scope, data: toArticle(a) });
    for (const c of customerRows) if (changedIds.has(c.id) || arrivedCustomers.has(c.id)) changes.push({ entity: 'customer', op: 'upsert', id: c.id, ...scope, data: toCustomer(c) });
    // Rows new in this sync are named by no other delivery yet.
    const changedExisting = {
      warehouses: changedWarehouses.filter((w) => warehousesBefore.has(w.code)),
      articles: changedArticles.filter((a) => articlesBefore.has(a.articleNumber)),
      customers: changedCustomers.filter((c) => customersBefore.has(c.erpCustomerId)),
    };
    if (changedExisting.warehouses.length || changedExisting.articles.length || changedExisting.customers.length) {
      const flipped = new Set(changedExisting.articles.filter((a) => articlesBefore.get(a.articleNumber)!.scannable !== a.scannable).map((a) => a.id));
      changes.push(...await masterDataForOthers(tx, accountId, {
        ...changedExisting, flipped, positionsWritten: new Set(writtenItems.map((i) => i.id)), warehouseRows,
      }));
    }

    for (const { prev } of moved) {
      if (prev!.accountId !== accountId) {
        changes.push({ entity: 'delivery', op: 'delete', id: prev!.delivery.id, tourId: prev!.delivery.tourId, accountId: prev!.accountId });
      }
    }
    const touchedDeliveries = new Set([
      ...writtenDeliveries.map((d) => d.id), ...writtenItems.map((i) => i.deliveryId), ...deletedItems.map((i) => i.deliveryId),
    ]);
    for (const id of touchedDeliveries) {
      changes.push({ entity: 'delivery', op: 'upsert', id, ...ownerOf(id), data: toDelivery(deliveryById.get(id)!, itemsByDelivery.get(id) ?? []) });
    }
    const scannable = (articleId: string) => articleById.get(articleId)?.scannable ?? true;
    for (const item of writtenItems) changes.push({ entity: 'position', op: 'upsert', id: item.id, ...ownerOf(item.deliveryId), data: toItem(item, scannable(item.articleId)) });
    for (const item of deletedItems) changes.push({ entity: 'position', op: 'delete', id: item.id, ...ownerOf(item.deliveryId) });
    for (const source of deletedSources) changes.push({ entity: 'contact', op: 'delete', id: source.id, ...ownerOf(source.deliveryId) });
    const insertedChannelsOf = new Map<string, ContactChannelRow[]>();
    for (const c of insertedChannels) insertedChannelsOf.set(c.sourceId, [...(insertedChannelsOf.get(c.sourceId) ?? []), c]);
    for (const source of insertedSources) {
      changes.push({ entity: 'contact', op: 'upsert', id: source.id, ...ownerOf(source.deliveryId), data: toContactSource(source, insertedChannelsOf.get(source.id) ?? []) });
    }

    if (movedRows.length) {
      // The new owner gets the delivery's local work, which moved with it.
      const written = new Set([...writtenItems.map((i) => i.id), ...insertedSources.map((s) => s.id)]);
      const bundle = await loadDeliveryDetails(tx, movedRows.map((d) => d.id));
      for (const d of bundle.deliveries) {
        const owner = ownerOf(d.id);
        for (const p of d.positions) if (!written.has(p.id)) changes.push({ entity: 'position', op: 'upsert', id: p.id, ...owner, data: p });
        for (const c of d.contacts) if (!written.has(c.id)) changes.push({ entity: 'contact', op: 'upsert', id: c.id, ...owner, data: c });
        for (const n of d.notes) changes.push({ entity: 'note', op: 'upsert', id: n.id, ...owner, data: n });
        for (const v of d.serviceValues) changes.push({ entity: 'serviceValue', op: 'upsert', id: serviceValueChangeId(v), ...owner, data: v });
        for (const a of d.attachments) changes.push({ entity: 'attachment', op: 'upsert', id: a.id, ...owner, data: a });
        if (d.latestPayment) changes.push({ entity: 'payment', op: 'upsert', id: d.latestPayment.id, ...owner, data: d.latestPayment });
      }
    }
    await recordChanges(tx, changes);

    const contactsChanged = new Set(replaced);
    const movedKeys = new Set(moved.map((o) => deliveryKey(o.input)));
    const created = open.filter((o) => !o.prev).length;
    const updated = open.filter((o) => o.prev && !movedKeys.has(deliveryKey(o.input))).map((o) => current.get(deliveryKey(o.input))!.id)
      .filter((id) => touchedDeliveries.has(id) || contactsChanged.has(id)).length;
    const writtenNew = writtenItems.filter((i) => !itemsBefore.has(i.id)).length;
    return {
      tour: toTour(tour),
      created: tourCreated,
      deliveries: { created, updated, unchanged: request.deliveries.length - created - updated - moved.length, moved: moved.length },
      positions: { created: writtenNew, updated: writtenItems.length - writtenNew, deleted: deletedItems.length },
    };
  });
}

