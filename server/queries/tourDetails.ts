import { and, asc, desc, eq, inArray } from 'drizzle-orm';
import type { DeliveryDetails, TourDetails } from '../../shared/schemas/deliveries.js';
import type { Db } from '../db/client.js';
import {
  articles, attachments, contactChannels, contactSources, customers, deliveries, deliveryItems, deliveryServiceValues,
  notes, paymentProtocol, tours, warehouses,
} from '../db/schema.js';
import { notFound } from '../errors.js';
import {
  toArticle, toAttachment, toContactSource, toCustomer, toDelivery, toItem, toNote, toPayment, toServiceValue, toTour,
  toWarehouse, type ContactChannelRow, type DeliveryRow,
} from './shapes.js';

export type DeliveryBundle = Omit<TourDetails, 'tour'>;

function groupBy<T>(rows: T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const k = key(row);
    const group = groups.get(k);
    if (group) group.push(row);
    else groups.set(k, [row]);
  }
  return groups;
}

const unique = <T>(values: (T | null)[]) => [...new Set(values.filter((v): v is T => v !== null))];

/**
 * Everything a driver needs of the given deliveries (kept in the given order) and the master
 * data they reference, in nine queries whatever their number. Run it inside a transaction
 * for a consistent snapshot.
 */
export async function loadDeliveryDetails(db: Db, rows: DeliveryRow[]): Promise<DeliveryBundle> {
  if (rows.length === 0) return { deliveries: [], customers: [], articles: [], warehouses: [] };
  const ids = rows.map((d) => d.id);
  const itemRows = await db.select({ item: deliveryItems, article: articles }).from(deliveryItems)
    .innerJoin(articles, eq(articles.id, deliveryItems.articleId))
    .where(inArray(deliveryItems.deliveryId, ids))
    .orderBy(asc(deliveryItems.lineNumber));
  const articleRows = [...new Map(itemRows.map(({ article }) => [article.id, article])).values()];
  const warehouseIds = unique([...itemRows.map(({ item }) => item.warehouseId), ...articleRows.map((a) => a.defaultWarehouseId)]);
  const customerIds = unique(rows.map((d) => d.customerId));

  const warehouseRows = warehouseIds.length ? await db.select().from(warehouses).where(inArray(warehouses.id, warehouseIds)).orderBy(asc(warehouses.code)) : [];
  const customerRows = await db.select().from(customers).where(inArray(customers.id, customerIds)).orderBy(asc(customers.erpCustomerId));
  const sourceRows = await db.select().from(contactSources).where(inArray(contactSources.deliveryId, ids)).orderBy(asc(contactSources.position));
  const channelRows: ContactChannelRow[] = await db.select({ channel: contactChannels }).from(contactChannels)
    .innerJoin(contactSources, eq(contactSources.id, contactChannels.sourceId))
    .where(inArray(contactSources.deliveryId, ids))
    .then((r) => r.map(({ channel }) => channel));
  const noteRows = await db.select().from(notes).where(inArray(notes.deliveryId, ids)).orderBy(asc(notes.createdAt), asc(notes.id));
  const valueRows = await db.select().from(deliveryServiceValues).where(inArray(deliveryServiceValues.deliveryId, ids));
  const paymentRows = await db.selectDistinctOn([paymentProtocol.deliveryId]).from(paymentProtocol)
    .where(inArray(paymentProtocol.deliveryId, ids))
    .orderBy(paymentProtocol.deliveryId, desc(paymentProtocol.receivedAt), desc(paymentProtocol.id));
  const attachmentRows = await db.select().from(attachments).where(inArray(attachments.deliveryId, ids)).orderBy(asc(attachments.createdAt));

  const itemsOf = groupBy(itemRows, ({ item }) => item.deliveryId);
  const sourcesOf = groupBy(sourceRows, (s) => s.deliveryId);
  const channelsOf = groupBy(channelRows, (c) => c.sourceId);
  const notesOf = groupBy(noteRows, (n) => n.deliveryId);
  const valuesOf = groupBy(valueRows, (v) => v.deliveryId);
  const attachmentsOf = groupBy(attachmentRows, (a) => a.deliveryId);
  const paymentOf = new Map(paymentRows.map((p) => [p.deliveryId, p]));
  const noteImage = new Map(attachmentRows.filter((a) => a.kind === 'note_image' && a.noteId).map((a) => [a.noteId!, a.id]));

  const details: DeliveryDetails[] = rows.map((row) => {
    const items = itemsOf.get(row.id) ?? [];
    const payment = paymentOf.get(row.id);
    return {
      ...toDelivery(row, items.map(({ item }) => item)),
      positions: items.map(({ item, article }) => toItem(item, article.scannable)),
      contacts: (sourcesOf.get(row.id) ?? []).map((s) => toContactSource(s, channelsOf.get(s.id) ?? [])),
      notes: (notesOf.get(row.id) ?? []).map((n) => toNote(n, noteImage.get(n.id) ?? null)),
      serviceValues: (valuesOf.get(row.id) ?? []).map(toServiceValue),
      latestPayment: payment ? toPayment(payment) : null,
      attachments: (attachmentsOf.get(row.id) ?? []).map(toAttachment),
    };
  });
  return {
    deliveries: details,
    customers: customerRows.map(toCustomer),
    articles: articleRows.sort((a, b) => a.articleNumber.localeCompare(b.articleNumber)).map(toArticle),
    warehouses: warehouseRows.map(toWarehouse),
  };
}

/** The deliveries of a tour in the driver's order. */
export const deliveriesOfTour = (db: Db, tourId: string) =>
  db.select().from(deliveries).where(eq(deliveries.tourId, tourId))
    .orderBy(asc(deliveries.sortOrder), asc(deliveries.belegnummer), asc(deliveries.id));

/**
 * One tour with everything in it, read from one snapshot in a fixed number of queries.
 * A tour of another account is not found, exactly as if it did not exist.
 */
export function loadTourDetails(db: Db, tourId: string, accountId: number): Promise<TourDetails> {
  return db.transaction(async (tx) => {
    const [tour] = await tx.select().from(tours).where(and(eq(tours.id, tourId), eq(tours.accountId, accountId)));
    if (!tour) throw notFound('Tour');
    const bundle = await loadDeliveryDetails(tx, await deliveriesOfTour(tx, tourId));
    return { tour: toTour(tour), ...bundle };
  }, { isolationLevel: 'repeatable read', accessMode: 'read only' });
}
