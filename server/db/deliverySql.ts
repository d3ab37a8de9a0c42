import { getTableName, sql, type AnyColumn, type SQL } from 'drizzle-orm';
import { deliveries, deliveryItems, tours } from './schema.js';

// SQL about a delivery row that both the engine (kept data) and the queries (lists) use.

/** An instant as JSON.stringify writes a JavaScript Date of it (milliseconds, cut as a Date cuts them). */
export const isoMs = (instant: AnyColumn) => sql`to_char(${instant} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The Berlin calendar day of a timestamp, as SQL date. */
export const berlinDay = (instant: AnyColumn | SQL) => sql`(${instant} AT TIME ZONE 'Europe/Berlin')::date`;

/**
 * The delivery row of the outer query, named with its table, for subqueries about it: in a select
 * from one table drizzle leaves columns unqualified, and a bare "id" inside a subquery is the
 * subquery's own.
 */
export const outerDeliveryId = sql`${sql.identifier(getTableName(deliveries))}.${sql.identifier(deliveries.id.name)}`;

/**
 * `isModified` of shared/rules/review.ts in SQL, for lists flagged or filtered in the database:
 * a line removed or reduced by credited pieces, or an active money credit.
 */
export const deliveryModifiedSql = sql<boolean>`(COALESCE(${deliveries.creditAmountCents}, 0) > 0 OR EXISTS (
  SELECT 1 FROM ${deliveryItems} WHERE ${deliveryItems.deliveryId} = ${outerDeliveryId}
    AND (${deliveryItems.state} = 'Removed' OR ${deliveryItems.creditedQuantity} > 0)))`.mapWith(Boolean);

/**
 * The start of a completed delivery's entry in GET /admin/completed-deliveries, as the JSON text
 * `JSON.stringify` gives for it (row_to_json writes no blanks, its keys in the select's order), up
 * to the customer's name: `{"belegnummer":…,"driver_personalnummer":70001,"customer_name":`.
 * Nothing in it changes once the delivery is completed (its lines, credit, tour and number are
 * final); the customer's name and the mail's time, which do, the list adds as it reads
 * (queries/adminDeliveries.ts). The completion keeps it (engine/completedEntries.ts); the
 * backfill of migration 0014 fills it for those before (db/backfills.ts).
 */
export const entryHeadSql = sql`(SELECT left(row_to_json(e)::text, -1) || ',"customer_name":' FROM (SELECT ${deliveries.belegnummer} AS belegnummer,
      ${deliveryModifiedSql} AS positions_modified, ${deliveries.id} AS delivery_id, ${deliveries.belegartId} AS belegart_id,
      ${isoMs(deliveries.completedAt)} AS completed_at, to_char(${berlinDay(deliveries.completedAt)}, 'YYYY-MM-DD') AS completed_day,
      ${tours.tourDate}::text AS tour_date, ${tours.accountId} AS driver_personalnummer
    FROM ${tours} WHERE ${tours.id} = ${deliveries.tourId}) AS e)`;
