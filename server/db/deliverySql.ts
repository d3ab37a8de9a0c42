import { getTableName, sql, type AnyColumn, type SQL } from 'drizzle-orm';
import { deliveries, deliveryItems } from './schema.js';

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
