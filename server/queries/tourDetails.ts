import { sql, type SQL } from 'drizzle-orm';
import type { DeliveryDetails, TourDetails } from '../../shared/schemas/deliveries.js';
import type { Db } from '../db/client.js';
import { fromJsonRows } from '../db/jsonRows.js';
import {
  articles, attachments, contactChannels, contactSources, customers, deliveries, deliveryItems, deliveryServiceValues,
  notes, paymentProtocol, tours, warehouses,
} from '../db/schema.js';
import { notFound } from '../errors.js';
import {
  toArticle, toAttachment, toContactSource, toCustomer, toDelivery, toItem, toNote, toPayment, toServiceValue, toTour, toWarehouse,
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

type JsonRows = Record<string, unknown>[] | null;

/**
 * The details of the deliveries that `selection` yields (delivery rows and their order `n`)
 * with everything they reference, and the row `tour` selects, in ONE statement: each table's
 * rows come back as a JSON array, so the read is one round trip and one snapshot whatever the
 * number of deliveries.
 */
async function readDetails(db: Db, selection: SQL, tour: SQL = sql`NULL::json`) {
  const result = await db.execute<Record<string, JsonRows> & { tour: Record<string, unknown> | null }>(sql`
    WITH d AS MATERIALIZED (${selection}),
    li AS MATERIALIZED (SELECT * FROM delivery_items WHERE delivery_id IN (SELECT id FROM d)),
    ar AS MATERIALIZED (SELECT * FROM articles WHERE id IN (SELECT article_id FROM li)),
    cs AS MATERIALIZED (SELECT * FROM contact_sources WHERE delivery_id IN (SELECT id FROM d))
    SELECT ${tour} AS tour,
      (SELECT json_agg(d ORDER BY d.n) FROM d) AS deliveries,
      (SELECT json_agg(li ORDER BY li.line_number) FROM li) AS items,
      (SELECT json_agg(ar) FROM ar) AS articles,
      (SELECT json_agg(w ORDER BY w.code) FROM warehouses w
        WHERE w.id IN (SELECT warehouse_id FROM li UNION SELECT default_warehouse_id FROM ar)) AS warehouses,
      (SELECT json_agg(c ORDER BY c.erp_customer_id) FROM customers c WHERE c.id IN (SELECT customer_id FROM d)) AS customers,
      (SELECT json_agg(cs ORDER BY cs.position) FROM cs) AS sources,
      (SELECT json_agg(ch) FROM contact_channels ch WHERE ch.source_id IN (SELECT id FROM cs)) AS channels,
      (SELECT json_agg(n ORDER BY n.created_at, n.id) FROM notes n WHERE n.delivery_id IN (SELECT id FROM d)) AS notes,
      (SELECT json_agg(v) FROM delivery_service_values v WHERE v.delivery_id IN (SELECT id FROM d)) AS service_values,
      (SELECT json_agg(p) FROM (SELECT DISTINCT ON (delivery_id) * FROM payment_protocol WHERE delivery_id IN (SELECT id FROM d)
        ORDER BY delivery_id, received_at DESC, id DESC) p) AS payments,
      (SELECT json_agg(a ORDER BY a.created_at) FROM attachments a WHERE a.delivery_id IN (SELECT id FROM d)) AS attachments`);
  const row = result.rows[0];
  const itemsOf = groupBy(fromJsonRows(deliveryItems, row.items), (item) => item.deliveryId);
  const articleRows = fromJsonRows(articles, row.articles);
  const scannable = new Map(articleRows.map((a) => [a.id, a.scannable]));
  const sourcesOf = groupBy(fromJsonRows(contactSources, row.sources), (s) => s.deliveryId);
  const channelsOf = groupBy(fromJsonRows(contactChannels, row.channels), (c) => c.sourceId);
  const notesOf = groupBy(fromJsonRows(notes, row.notes), (n) => n.deliveryId);
  const valuesOf = groupBy(fromJsonRows(deliveryServiceValues, row.service_values), (v) => v.deliveryId);
  const attachmentRows = fromJsonRows(attachments, row.attachments);
  const attachmentsOf = groupBy(attachmentRows, (a) => a.deliveryId);
  const paymentOf = new Map(fromJsonRows(paymentProtocol, row.payments).map((p) => [p.deliveryId, p]));
  const noteImage = new Map(attachmentRows.filter((a) => a.kind === 'note_image' && a.noteId).map((a) => [a.noteId!, a.id]));

  const details: DeliveryDetails[] = fromJsonRows(deliveries, row.deliveries).map((delivery) => {
    const items = itemsOf.get(delivery.id) ?? [];
    const payment = paymentOf.get(delivery.id);
    return {
      ...toDelivery(delivery, items),
      positions: items.map((item) => toItem(item, scannable.get(item.articleId)!)),
      contacts: (sourcesOf.get(delivery.id) ?? []).map((s) => toContactSource(s, channelsOf.get(s.id) ?? [])),
      notes: (notesOf.get(delivery.id) ?? []).map((n) => toNote(n, noteImage.get(n.id) ?? null)),
      serviceValues: (valuesOf.get(delivery.id) ?? []).map(toServiceValue),
      latestPayment: payment ? toPayment(payment) : null,
      attachments: (attachmentsOf.get(delivery.id) ?? []).map(toAttachment),
    };
  });
  const bundle: DeliveryBundle = {
    deliveries: details,
    customers: fromJsonRows(customers, row.customers).map(toCustomer),
    articles: articleRows.sort((a, b) => a.articleNumber.localeCompare(b.articleNumber)).map(toArticle),
    warehouses: fromJsonRows(warehouses, row.warehouses).map(toWarehouse),
  };
  return { tour: row.tour ? fromJsonRows(tours, [row.tour])[0] : undefined, bundle };
}

/** Everything a driver needs of the given deliveries (kept in the given order) and the master data they reference. */
export async function loadDeliveryDetails(db: Db, ids: string[]): Promise<DeliveryBundle> {
  if (ids.length === 0) return { deliveries: [], customers: [], articles: [], warehouses: [] };
  const { bundle } = await readDetails(db, sql`
    SELECT d.*, k.n FROM jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb) WITH ORDINALITY AS k(id, n)
    JOIN deliveries d ON d.id = k.id::uuid`);
  return bundle;
}

/**
 * One tour with everything in it, deliveries in the driver's order, read in one statement.
 * A tour of another account is not found, exactly as if it did not exist.
 */
export async function loadTourDetails(db: Db, tourId: string, accountId: number): Promise<TourDetails> {
  const { tour, bundle } = await readDetails(db, sql`
    SELECT d.*, row_number() OVER (ORDER BY d.sort_order, d.belegnummer, d.id) AS n
    FROM deliveries d JOIN tours t ON t.id = d.tour_id WHERE t.id = ${tourId} AND t.account_id = ${accountId}`,
  sql`(SELECT row_to_json(t) FROM tours t WHERE t.id = ${tourId} AND t.account_id = ${accountId})`);
  if (!tour) throw notFound('Tour');
  return { tour: toTour(tour), ...bundle };
}
