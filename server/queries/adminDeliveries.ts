import { and, asc, eq, isNotNull, isNull, sql, type AnyColumn, type SQL } from 'drizzle-orm';
import type { CompletedDeliveryItem } from '../../shared/schemas/admin.js';
import type { Db } from '../db/client.js';
import { customers, deliveries, tours } from '../db/schema.js';
import { berlinDay, deliveryModifiedSql, isoMs } from '../db/deliverySql.js';
import { isoMicros } from './adminShapes.js';
import { cutPage, type Page, type PageRequest } from './page.js';

/** Inclusive bounds on the Berlin calendar day of the completion; null is open. */
export interface DayRange {
  from: string | null;
  to: string | null;
}

const completedDay = berlinDay(deliveries.completedAt);

/**
 * The same as comparing `completedDay` with the bounds, written as a range on `completed_at`
 * so that its index serves: a Berlin day runs from its local midnight to the next one (23 or
 * 25 hours on the days the clocks change).
 */
function completedWithin(range: DayRange): SQL[] {
  const midnight = (day: SQL) => sql`((${day})::timestamp AT TIME ZONE 'Europe/Berlin')`;
  return [
    eq(deliveries.state, 'completed'),
    isNotNull(deliveries.completedAt),
    ...(range.from ? [sql`${deliveries.completedAt} >= ${midnight(sql`${range.from}::date`)}`] : []),
    ...(range.to ? [sql`${deliveries.completedAt} < ${midnight(sql`${range.to}::date + 1`)}`] : []),
  ];
}

/** An instant as milliseconds since the epoch, cut as a JavaScript Date cuts it (both drivers answer it alike). */
const epochMs = (instant: AnyColumn) => sql`floor(extract(epoch from ${instant}) * 1000)::bigint::text`;

/** A completed delivery's place in the list: completion time (ISO, to the microsecond), number, kind. */
export type CompletedKey = [completedAt: string, belegnummer: string, belegartId: number];

/** After a key in the list's order; the bound on `completed_at` alone lets its index serve. */
function afterKey([at, belegnummer, belegartId]: CompletedKey): SQL {
  const instant = sql`${at}::timestamptz`;
  return sql`${deliveries.completedAt} >= ${instant} AND (${deliveries.completedAt} > ${instant}
    OR (${deliveries.belegnummer}, ${deliveries.belegartId}) > (${belegnummer}::text, ${belegartId}::int))`;
}

type CompletedRow = {
  belegnummer: string;
  positions_modified: boolean;
  delivery_id: string;
  belegart_id: number;
  completed_ms: string;
  completed_day: string;
  tour_date: string;
  driver_personalnummer: string;
  customer_name: string;
  mail_sent_ms: string | null;
};

const completedList = (
  range: DayRange,
  page?: PageRequest<CompletedKey>,
) => sql`SELECT ${deliveries.belegnummer} AS belegnummer, ${deliveryModifiedSql} AS positions_modified,
    ${deliveries.id}::text AS delivery_id, ${deliveries.belegartId} AS belegart_id, ${epochMs(deliveries.completedAt)} AS completed_ms,
    to_char(${completedDay}, 'YYYY-MM-DD') AS completed_day, ${tours.tourDate}::text AS tour_date,
    ${tours.accountId}::text AS driver_personalnummer, ${customers.name} AS customer_name, ${epochMs(deliveries.mailSentAt)} AS mail_sent_ms
    ${page ? sql`, ${isoMicros(deliveries.completedAt)} AS completed_key` : sql``}
  FROM ${deliveries} JOIN ${tours} ON ${tours.id} = ${deliveries.tourId} JOIN ${customers} ON ${customers.id} = ${deliveries.customerId}
  WHERE ${and(...completedWithin(range), ...(page?.after ? [afterKey(page.after)] : []))}
  ORDER BY ${deliveries.completedAt}, ${deliveries.belegnummer}, ${deliveries.belegartId}${page ? sql` LIMIT ${page.limit + 1}` : sql``}`;

const toItem = (r: CompletedRow): CompletedDeliveryItem => ({
  belegnummer: r.belegnummer,
  positions_modified: r.positions_modified,
  delivery_id: r.delivery_id,
  belegart_id: r.belegart_id,
  completed_at: new Date(Number(r.completed_ms)).toISOString(),
  completed_day: r.completed_day,
  tour_date: r.tour_date,
  driver_personalnummer: Number(r.driver_personalnummer),
  customer_name: r.customer_name,
  mail_sent_at: r.mail_sent_ms === null ? null : new Date(Number(r.mail_sent_ms)).toISOString(),
});

/**
 * The list's entries as the JSON text `JSON.stringify(toItem(row))` gives: the start kept on each
 * delivery at its completion (engine/completedEntries.ts), then the customer's name and the mail's
 * time as they are now. A page is joined, not built per entry from the tour and the lines and
 * parsed (measured in ebf30d5); the customers are master data, hashed whole or looked up.
 */
const completedJsonList = (range: DayRange) => sql`SELECT ${deliveries.completedEntryHead} || to_json(${customers.name})::text
    || ',"mail_sent_at":' || COALESCE(to_json(${isoMs(deliveries.mailSentAt)})::text, 'null') || '}' AS json
  FROM ${deliveries} JOIN ${customers} ON ${customers.id} = ${deliveries.customerId}
  WHERE ${and(...completedWithin(range))}
  ORDER BY ${deliveries.completedAt}, ${deliveries.belegnummer}, ${deliveries.belegartId}`;

export interface CompletedDeliveriesSink {
  /** Called once, before the first page: how many entries follow. */
  count(total: number): Promise<void>;
  /** The next entries in order, each as its JSON text; the next page is read once this settles (the socket's backpressure). */
  page(entries: string[]): Promise<void>;
}

/** A list up to this long (a day of a mid-size company is 2,500) is read by one statement; 5,000 entries are about 1.6 MB. */
const ONE_READ = 5000;

/**
 * The completed deliveries of a range, oldest completion first. A list of up to `ONE_READ`
 * entries, a day's, is read by one statement: a transaction with a count and a cursor's pages
 * costs a round trip each, most of a day's answer (measured in ebf30d5). A longer one (without
 * bounds it is every completion ever, 625,000 at a year of a mid-size company) is never held
 * whole: it is read again in pages from a cursor in one read-only snapshot (the count and the
 * entries agree). Pages are small: a page's rows live until the socket has taken them.
 */
export async function streamCompletedDeliveries(
  db: Db,
  range: DayRange,
  sink: CompletedDeliveriesSink,
  { pageSize = 200, oneRead = ONE_READ } = {},
): Promise<void> {
  const { rows: first } = await db.execute<{ json: string }>(completedJsonList(range).append(sql` LIMIT ${oneRead + 1}`));
  if (first.length <= oneRead) {
    await sink.count(first.length);
    if (first.length > 0) await sink.page(first.map((row) => row.json));
    return;
  }
  await db.transaction(
    async (tx) => {
      const [{ total }] = (
        await tx.execute<{ total: string }>(sql`SELECT count(*)::text AS total FROM ${deliveries}
      WHERE ${and(...completedWithin(range))}`)
      ).rows;
      await sink.count(Number(total));
      await tx.execute(sql`DECLARE completed_list NO SCROLL CURSOR FOR `.append(completedJsonList(range)));
      for (;;) {
        const { rows } = await tx.execute<{ json: string }>(sql`FETCH ${sql.raw(String(pageSize))} FROM completed_list`);
        if (rows.length > 0) await sink.page(rows.map((row) => row.json));
        if (rows.length < pageSize) return;
      }
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}

/** One page of the list `streamCompletedDeliveries` sends whole. */
export async function completedDeliveriesPage(
  db: Db,
  range: DayRange,
  page: PageRequest<CompletedKey>,
): Promise<Page<CompletedDeliveryItem, CompletedKey>> {
  const { rows } = await db.execute<CompletedRow & { completed_key: string }>(completedList(range, page));
  return cutPage(rows, page.limit, (r): CompletedKey => [r.completed_key, r.belegnummer, r.belegart_id], toItem);
}

/** A number's place in the list of open mails: its earliest completion (ISO, to the microsecond) and the number. */
export type DeliveredKey = [firstCompletedAt: string, belegnummer: string];

const firstCompleted = sql`min(${deliveries.completedAt})`;

/** Numbers of completed deliveries whose mail is still open, each once, by earliest completion. */
export async function deliveredBelegnummern(db: Db, day: string | null): Promise<string[]> {
  const rows = await openMails(db, day);
  return rows.map((r) => r.belegnummer);
}

/** One page of `deliveredBelegnummern`. */
export async function deliveredBelegnummernPage(
  db: Db,
  day: string | null,
  page: PageRequest<DeliveredKey>,
): Promise<Page<string, DeliveredKey>> {
  const rows = await openMails(db, day, page);
  return cutPage(
    rows,
    page.limit,
    (r): DeliveredKey => [r.first!, r.belegnummer],
    (r) => r.belegnummer,
  );
}

function openMails(db: Db, day: string | null, page?: PageRequest<DeliveredKey>) {
  const query = db
    .select({ belegnummer: deliveries.belegnummer, ...(page ? { first: isoMicros(firstCompleted) } : {}) })
    .from(deliveries)
    .where(and(...completedWithin({ from: day, to: day }), isNull(deliveries.mailSentAt)))
    .groupBy(deliveries.belegnummer)
    .having(
      page?.after
        ? sql`(${firstCompleted}, ${deliveries.belegnummer}) > (${page.after[0]}::timestamptz, ${page.after[1]}::text)`
        : undefined,
    )
    .orderBy(firstCompleted, asc(deliveries.belegnummer));
  return page ? query.limit(page.limit + 1) : query;
}
