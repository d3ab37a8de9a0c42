import { and, asc, eq, isNotNull, isNull, sql, type AnyColumn, type SQL } from 'drizzle-orm';
import type { CompletedDeliveryItem } from '../../shared/schemas/admin.js';
import type { Db } from '../db/client.js';
import { customers, deliveries, tours } from '../db/schema.js';
import { berlinDay, deliveryModifiedSql } from './adminShapes.js';

/** Inclusive bounds on the Berlin calendar day of the completion; null is open. */
export interface DayRange { from: string | null; to: string | null }

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

type CompletedRow = {
  belegnummer: string; positions_modified: boolean; delivery_id: string; belegart_id: number; completed_ms: string;
  completed_day: string; tour_date: string; driver_personalnummer: string; customer_name: string; mail_sent_ms: string | null;
};

const completedList = (range: DayRange) => sql`SELECT ${deliveries.belegnummer} AS belegnummer, ${deliveryModifiedSql} AS positions_modified,
    ${deliveries.id}::text AS delivery_id, ${deliveries.belegartId} AS belegart_id, ${epochMs(deliveries.completedAt)} AS completed_ms,
    to_char(${completedDay}, 'YYYY-MM-DD') AS completed_day, ${tours.tourDate}::text AS tour_date,
    ${tours.accountId}::text AS driver_personalnummer, ${customers.name} AS customer_name, ${epochMs(deliveries.mailSentAt)} AS mail_sent_ms
  FROM ${deliveries} JOIN ${tours} ON ${tours.id} = ${deliveries.tourId} JOIN ${customers} ON ${customers.id} = ${deliveries.customerId}
  WHERE ${and(...completedWithin(range))}
  ORDER BY ${deliveries.completedAt}, ${deliveries.belegnummer}, ${deliveries.belegartId}`;

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

export interface CompletedDeliveriesSink {
  /** Called once, before the first page: how many entries follow. */
  count(total: number): Promise<void>;
  /** The next entries in order; the next page is read once this settles (the socket's backpressure). */
  page(entries: CompletedDeliveryItem[]): Promise<void>;
}

/**
 * The completed deliveries of a range, oldest completion first, read in pages from a cursor in
 * one read-only snapshot (the count and the entries agree): the list without bounds is every
 * completion ever, 625,000 at a year of a mid-size company, and is never held whole.
 */
export async function streamCompletedDeliveries(db: Db, range: DayRange, sink: CompletedDeliveriesSink, pageSize = 1000): Promise<void> {
  await db.transaction(async (tx) => {
    const [{ total }] = (await tx.execute<{ total: string }>(sql`SELECT count(*)::text AS total FROM ${deliveries}
      WHERE ${and(...completedWithin(range))}`)).rows;
    await sink.count(Number(total));
    await tx.execute(sql`DECLARE completed_list NO SCROLL CURSOR FOR `.append(completedList(range)));
    for (;;) {
      const { rows } = await tx.execute<CompletedRow>(sql`FETCH ${sql.raw(String(pageSize))} FROM completed_list`);
      if (rows.length > 0) await sink.page(rows.map(toItem));
      if (rows.length < pageSize) return;
    }
  }, { isolationLevel: 'repeatable read', accessMode: 'read only' });
}

/** Numbers of completed deliveries whose mail is still open, each once, by earliest completion. */
export async function deliveredBelegnummern(db: Db, day: string | null): Promise<string[]> {
  const rows = await db.select({ belegnummer: deliveries.belegnummer }).from(deliveries)
    .where(and(...completedWithin({ from: day, to: day }), isNull(deliveries.mailSentAt)))
    .groupBy(deliveries.belegnummer)
    .orderBy(sql`min(${deliveries.completedAt})`, asc(deliveries.belegnummer));
  return rows.map((r) => r.belegnummer);
}
