import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { berlinDay, deliveryModifiedSql, isoMs } from '../db/deliverySql.js';
import { deliveries, tours } from '../db/schema.js';

/**
 * The start of a completed delivery's entry in GET /admin/completed-deliveries, as the JSON text
 * `JSON.stringify` gives for it (row_to_json writes no blanks, its keys in the select's order), up
 * to the customer's name: `{"belegnummer":…,"driver_personalnummer":70001,"customer_name":`.
 * Nothing in it changes once the delivery is completed (its lines, credit, tour and number are
 * final); the customer's name and the mail's time, which do, the list adds as it reads
 * (queries/adminDeliveries.ts). The same expression fills it in migrations/0014_completed_entry_head.sql.
 */
const entryHeadSql = sql`(SELECT left(row_to_json(e)::text, -1) || ',"customer_name":' FROM (SELECT ${deliveries.belegnummer} AS belegnummer,
      ${deliveryModifiedSql} AS positions_modified, ${deliveries.id} AS delivery_id, ${deliveries.belegartId} AS belegart_id,
      ${isoMs(deliveries.completedAt)} AS completed_at, to_char(${berlinDay(deliveries.completedAt)}, 'YYYY-MM-DD') AS completed_day,
      ${tours.tourDate}::text AS tour_date, ${tours.accountId} AS driver_personalnummer
    FROM ${tours} WHERE ${tours.id} = ${deliveries.tourId}) AS e)`;

/**
 * Keeps the entry's start on the completed deliveries `where` selects, in the completion's
 * transaction: the list then reads a day's entries instead of building each from the delivery,
 * its tour and its lines (docs/benchmarks.md, "A year of history").
 */
export async function keepCompletedEntryHead(tx: Db, where: SQL): Promise<void> {
  await tx.execute(
    sql`UPDATE ${deliveries} SET completed_entry_head = ${entryHeadSql} WHERE ${deliveries.state} = 'completed' AND ${where}`,
  );
}
