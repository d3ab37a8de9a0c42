import { sql, type Placeholder, type SQL } from 'drizzle-orm';
import type { DeliveryDetails, TourDetails } from '../../shared/schemas/deliveries.js';
import { executePrepared, type Db } from '../db/client.js';
import { arrayOf, fromJsonRows } from '../db/jsonRows.js';
import {
  articles,
  attachments,
  contactChannels,
  contactSources,
  customers,
  deliveries,
  deliveryItems,
  deliveryServiceValues,
  notes,
  paymentProtocol,
  tours,
  warehouses,
} from '../db/schema.js';
import { notFound } from '../errors.js';
import {
  toArticle,
  toAttachment,
  toContactSource,
  toCustomer,
  toDelivery,
  toItem,
  toNote,
  toPayment,
  toServiceValue,
  toTour,
  toWarehouse,
} from './rows.js';

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

/** A tour as its account sees it (placeholders of a prepared statement): another account's tour is not there. */
type TourKey = { id: Placeholder; accountId: Placeholder };
type JsonRows = Record<string, unknown>[] | null;
type HeldRow = { delivery_id: string; device_id: string; completed_at: string; reported_at: string };
type DetailRows = Record<string, JsonRows> & { version: string; tour: Record<string, unknown> | null };

/**
 * The rows of the deliveries that `selection` yields (columns `r`: the delivery row, `v`: its
 * xmin, `id`, `customer_id`, `n`: the order), of everything they reference and of `tour`, each
 * table as a CTE of whole rows `r` and their xmin `v`.
 *
 * `version` sums a hash of the xmin of every one of these rows: an insert, update or delete of
 * any of them gives a row a new xmin (or removes it), so an equal version means an equal answer.
 * It costs a scan of the rows but none of the JSON, which is most of a read; without
 * `withRows` only the versions are kept.
 */
function detailRows(selection: SQL, tour: TourKey | undefined, withRows = true): SQL {
  const r = withRows ? sql`x AS r, ` : sql``;
  return sql`
    WITH tr AS MATERIALIZED (SELECT ${r}x.xmin AS v FROM tours x
      WHERE ${tour ? sql`x.id = ${tour.id} AND x.account_id = ${tour.accountId}` : sql`false`}),
    d AS MATERIALIZED (${selection}),
    li AS MATERIALIZED (SELECT ${r}x.xmin AS v, x.article_id, x.warehouse_id, x.line_number FROM delivery_items x
      WHERE x.delivery_id IN (SELECT id FROM d)),
    ar AS MATERIALIZED (SELECT ${r}x.xmin AS v, x.default_warehouse_id FROM articles x WHERE x.id IN (SELECT article_id FROM li)),
    w AS MATERIALIZED (SELECT ${r}x.xmin AS v, x.code FROM warehouses x
      WHERE x.id IN (SELECT warehouse_id FROM li UNION SELECT default_warehouse_id FROM ar)),
    c AS MATERIALIZED (SELECT ${r}x.xmin AS v, x.erp_customer_id FROM customers x WHERE x.id IN (SELECT customer_id FROM d)),
    cs AS MATERIALIZED (SELECT ${r}x.xmin AS v, x.id, x.position FROM contact_sources x WHERE x.delivery_id IN (SELECT id FROM d)),
    ch AS MATERIALIZED (SELECT ${r}x.xmin AS v FROM contact_channels x WHERE x.source_id IN (SELECT id FROM cs)),
    n AS MATERIALIZED (SELECT ${r}x.xmin AS v, x.created_at, x.id FROM notes x WHERE x.delivery_id IN (SELECT id FROM d)),
    sv AS MATERIALIZED (SELECT ${r}x.xmin AS v FROM delivery_service_values x WHERE x.delivery_id IN (SELECT id FROM d)),
    p AS MATERIALIZED (SELECT DISTINCT ON (x.delivery_id) ${r}x.xmin AS v FROM payment_protocol x
      WHERE x.delivery_id IN (SELECT id FROM d) ORDER BY x.delivery_id, x.received_at DESC, x.id DESC),
    a AS MATERIALIZED (SELECT ${r}x.xmin AS v, x.created_at FROM attachments x WHERE x.delivery_id IN (SELECT id FROM d)),
    hd AS MATERIALIZED (${heldOnDevices}),
    version AS MATERIALIZED (SELECT count(*) || '.' || coalesce(sum(hashtextextended(v::text, tag)), 0) AS v FROM (
      SELECT v, 1 AS tag FROM tr UNION ALL SELECT v, 2 FROM d UNION ALL SELECT v, 3 FROM li UNION ALL SELECT v, 4 FROM ar
      UNION ALL SELECT v, 5 FROM w UNION ALL SELECT v, 6 FROM c UNION ALL SELECT v, 7 FROM cs UNION ALL SELECT v, 8 FROM ch
      UNION ALL SELECT v, 9 FROM n UNION ALL SELECT v, 10 FROM sv UNION ALL SELECT v, 11 FROM p UNION ALL SELECT v, 12 FROM a
      UNION ALL SELECT v, 13 FROM hd) rows)`;
}

/**
 * The completions that phones of the tour's account hold unsent for these deliveries (those not
 * completed on the service yet), from the devices' latest reports; the newest report wins.
 * A device's report changes the tour's version only while it holds one of them.
 */
const heldOnDevices = sql`
  SELECT DISTINCT ON (e.delivery_id) x.xmin AS v, e.delivery_id, x.device_id, e.completed_at, x.last_seen_at AS reported_at
  FROM devices x CROSS JOIN LATERAL jsonb_to_recordset(x.pending_completions) AS e(delivery_id uuid, completed_at text)
  WHERE x.pending_completion_count > 0
    AND x.account_id IN (SELECT t.account_id FROM tours t JOIN deliveries y ON y.tour_id = t.id WHERE y.id IN (SELECT id FROM d))
    AND e.delivery_id IN (SELECT y.id FROM deliveries y WHERE y.id IN (SELECT id FROM d) AND y.state <> 'completed')
  ORDER BY e.delivery_id, x.last_seen_at DESC, x.device_id`;

/** The version and every table's rows as a JSON array in ONE statement: one round trip and one snapshot whatever the number of deliveries. */
function detailsJson(selection: SQL, tour?: TourKey): SQL {
  return sql`${detailRows(selection, tour)}
    SELECT v AS version,
      (SELECT row_to_json(r) FROM tr) AS tour,
      (SELECT json_agg(r ORDER BY n) FROM d) AS deliveries,
      (SELECT json_agg(r ORDER BY line_number) FROM li) AS items,
      (SELECT json_agg(r) FROM ar) AS articles,
      (SELECT json_agg(r ORDER BY code) FROM w) AS warehouses,
      (SELECT json_agg(r ORDER BY erp_customer_id) FROM c) AS customers,
      (SELECT json_agg(r ORDER BY position) FROM cs) AS sources,
      (SELECT json_agg(r) FROM ch) AS channels,
      (SELECT json_agg(r ORDER BY created_at, id) FROM n) AS notes,
      (SELECT json_agg(r) FROM sv) AS service_values,
      (SELECT json_agg(r) FROM p) AS payments,
      (SELECT json_agg(r ORDER BY created_at) FROM a) AS attachments,
      (SELECT json_agg(json_build_object('delivery_id', delivery_id, 'device_id', device_id, 'completed_at', completed_at,
        'reported_at', reported_at)) FROM hd) AS held
    FROM version`;
}

/** The tour and the deliveries' details, from the JSON of `detailsJson`. */
function assemble(row: DetailRows) {
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
  const heldOf = new Map(((row.held ?? []) as unknown as HeldRow[]).map((h) => [h.delivery_id, h]));
  const noteImage = new Map(attachmentRows.filter((a) => a.kind === 'note_image' && a.noteId).map((a) => [a.noteId!, a.id]));

  const details: DeliveryDetails[] = fromJsonRows(deliveries, row.deliveries).map((delivery) => {
    const items = itemsOf.get(delivery.id) ?? [];
    const payment = paymentOf.get(delivery.id);
    const held = heldOf.get(delivery.id);
    return {
      ...toDelivery(delivery, items),
      positions: items.map((item) => toItem(item, scannable.get(item.articleId)!)),
      contacts: (sourcesOf.get(delivery.id) ?? []).map((s) => toContactSource(s, channelsOf.get(s.id) ?? [])),
      notes: (notesOf.get(delivery.id) ?? []).map((n) => toNote(n, noteImage.get(n.id) ?? null)),
      serviceValues: (valuesOf.get(delivery.id) ?? []).map(toServiceValue),
      latestPayment: payment ? toPayment(payment) : null,
      attachments: (attachmentsOf.get(delivery.id) ?? []).map(toAttachment),
      ...(held && {
        pendingOnDevice: { deviceId: held.device_id, completedAt: held.completed_at, reportedAt: new Date(held.reported_at).toISOString() },
      }),
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
  const result = await db.execute<DetailRows>(
    detailsJson(sql`
    SELECT d AS r, d.xmin AS v, d.id, d.customer_id, k.n FROM unnest(${arrayOf(ids, 'uuid')}) WITH ORDINALITY AS k(id, n)
    JOIN deliveries d ON d.id = k.id`),
  );
  return assemble(result.rows[0]).bundle;
}

/** The tour of `renderTour`'s statements, bound per call. */
const tourKey: TourKey = { id: sql.placeholder('tourId'), accountId: sql.placeholder('accountId') };
const tourDeliveries = () => sql`
  SELECT d AS r, d.xmin AS v, d.id, d.customer_id, row_number() OVER (ORDER BY d.sort_order, d.belegnummer, d.id) AS n
  FROM deliveries d JOIN tours t ON t.id = d.tour_id WHERE t.id = ${tourKey.id} AND t.account_id = ${tourKey.accountId}`;

export interface RenderedTour {
  /** Changes whenever anything in the answer changes (see `detailRows`); the answer's ETag. */
  version: string;
  /** The answer as UTF-8 JSON. */
  body: Buffer;
}

/**
 * One tour with everything in it, deliveries in the driver's order, as the JSON answer. A tour of
 * another account is not found, exactly as if it did not exist. When `known` (a version read
 * before) is still current, the answer is `'unchanged'` and nothing was rendered.
 */
export async function renderTour(db: Db, tourId: string, accountId: number, known?: string): Promise<RenderedTour | 'unchanged'> {
  const values = { tourId, accountId };
  if (known !== undefined) {
    const [current] = await executePrepared<{ v: string }>(
      db,
      'tour_version',
      () => sql`${detailRows(tourDeliveries(), tourKey, false)} SELECT v FROM version`,
      values,
    );
    if (current.v === known) return 'unchanged';
  }
  const [rows] = await executePrepared<DetailRows>(db, 'tour_details', () => detailsJson(tourDeliveries(), tourKey), values);
  const { tour: row, bundle } = assemble(rows);
  if (!row) throw notFound('Tour');
  const details: TourDetails = { tour: toTour(row), ...bundle };
  return { version: rows.version, body: Buffer.from(JSON.stringify(details)) };
}
