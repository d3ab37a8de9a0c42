import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../../server/db/client.js';
import { deliveries } from '../../server/db/schema.js';
import { keepCompletedEntryHead } from '../../server/engine/completedEntries.js';

/** A company's shape: drivers, deliveries per tour, lines per delivery. */
export interface CompanySize {
  drivers: number;
  deliveries: number;
  positions: number;
}

export const FIRST_DRIVER = 70_001;
export const ARTICLES = 800;
export const CUSTOMERS = 2000;
export const PAYMENT_CODE = 'BENCH-BAR';
/** An array as one parameter (drizzle spreads a JavaScript array into a list); for codes and dates, which need no quoting. */
export const pgArray = (values: string[]) => `{${values.join(',')}}`;
/**
 * A UUIDv7 of the time `at`, an SQL expression (shared/ids.ts's layout, made in SQL): the history
 * holds time-ordered ids as the service and the SDK make them, so its indexes are laid out as a
 * year of pushes leaves them.
 */
const idAt = (at: string) =>
  sql.raw(`encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) PLACING
    substring(int8send(floor(extract(epoch FROM ${at}) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid`);

/**
 * A block of days is first generated into temporary tables (no WAL, dropped at commit) that hold
 * the new rows with their ids, and every table is then filled from them with one INSERT each.
 * Every join of the load is between these few-thousand-row tables: none reads the history
 * already loaded, so a day costs the same at a year as on the first day.
 */
async function generateTours(tx: Db, size: CompanySize, dates: string[], completed: boolean, lastDay: string) {
  const done = sql.raw(String(completed));
  const temp = (name: string, body: SQL) => tx.execute(sql`CREATE TEMP TABLE ${sql.raw(name)} ON COMMIT DROP AS `.append(body));
  await temp(
    'h_t',
    sql`SELECT ${idAt("(d - 1)::timestamp AT TIME ZONE 'Europe/Berlin'")} AS id, a AS account_id, d AS tour_date FROM unnest(${pgArray(dates)}::date[]) AS d
    CROSS JOIN generate_series(${FIRST_DRIVER}::bigint, ${FIRST_DRIVER + size.drivers - 1}::bigint) AS a`,
  );
  // n numbers a delivery within its day; the pick h chooses the few that deviate (h < 150 a removed line,
  // h < 300 a money credit), whose write-back still fails (9000 ≤ h < 9005) and whose mail is still open
  // (h ≥ 9995; on the last day all of them).
  await temp(
    'h_d',
    sql`SELECT ${idAt("v.day_start - interval '1 day'")} AS id, t.id AS tour_id, t.account_id, t.tour_date, s AS sort_order, v.n, v.h, v.belegnummer, c.id AS customer_id,
      c.address, car.id AS car_id, v.day_start, CASE WHEN ${done} THEN v.done END AS completed_at,
      CASE WHEN ${done} THEN v.done ELSE v.day_start END AS updated_at,
      ${done} AND t.tour_date < ${lastDay}::date AND v.h < 9995 AS mail_sent
    FROM h_t t CROSS JOIN generate_series(1, ${size.deliveries}) AS s
    CROSS JOIN LATERAL (SELECT (t.account_id - ${FIRST_DRIVER}) * ${size.deliveries} + s - 1 AS n,
      'H' || to_char(t.tour_date, 'YYYYMMDD') || '-' || (t.account_id - ${FIRST_DRIVER - 1}) || '-' || s AS belegnummer,
      (t.tour_date + time '07:00') AT TIME ZONE 'Europe/Berlin' AS day_start,
      (t.tour_date + time '07:30' + s * interval '12 minutes') AT TIME ZONE 'Europe/Berlin' AS done) AS v0
    CROSS JOIN LATERAL (SELECT v0.*, (hashtext(v0.belegnummer)::bigint + 2147483648) % 10000 AS h) AS v
    JOIN customers c ON c.erp_customer_id = 500000 + (v.n * 7919) % ${CUSTOMERS}
    JOIN cars car ON car.account_id = t.account_id`,
  );
  // Named and ordered as delivery_items' columns: the change log keeps such rows as JSON.
  await temp(
    'h_i',
    sql`SELECT ${idAt("d.day_start - interval '1 day'")} AS id, d.id AS delivery_id, p * 10 AS line_number, a.id AS article_id, a.default_warehouse_id AS warehouse_id,
      v.q AS required_quantity, CASE WHEN v.removed OR NOT ${done} OR NOT a.scannable THEN 0 ELSE v.q END AS scanned_quantity,
      0 AS credited_quantity, CASE WHEN v.removed THEN 'Removed' WHEN ${done} AND a.scannable THEN 'Done' ELSE 'InProgress' END AS state,
      'Stk' AS unit, 100 + v.article AS unit_price_cents, d.updated_at
    FROM h_d d CROSS JOIN generate_series(1, ${size.positions}) AS p
    CROSS JOIN LATERAL (SELECT (d.n * 31 + p * 17) % ${ARTICLES} AS article, 1 + (d.n + p) % 12 AS q, ${done} AND p = 1 AND d.h < 150 AS removed) AS v
    JOIN articles a ON a.article_number = 'ART-' || v.article`,
  );
  // Temporary tables are never analysed by autovacuum; without statistics the joins below are planned for a few rows.
  await tx.execute(sql`ANALYZE h_t, h_d, h_i`);
  await tx.execute(
    sql`INSERT INTO tours (id, account_id, tour_date, name) SELECT id, account_id, tour_date, 'Tour ' || (account_id - ${FIRST_DRIVER - 1}) FROM h_t`,
  );
  await tx.execute(sql`INSERT INTO deliveries (id, tour_id, belegart_id, belegnummer, customer_id, delivery_address, state, sort_order,
      erp_sequence, erp_open_amount_cents, payment_method_id, payment_term, assigned_car_id, credit_amount_cents, credit_reason,
      credit_updated_at, completed_at, mail_sent_at, review_changed_at, review_resolved_at, created_at, updated_at)
    SELECT d.id, d.tour_id, 20, d.belegnummer, d.customer_id, d.address, ${completed ? 'completed' : 'active'}, d.sort_order, d.sort_order * 10,
      (d.n % 3) * 1000, (SELECT id FROM payment_methods WHERE code = ${PAYMENT_CODE}), '14 Tage netto', d.car_id,
      CASE WHEN ${done} AND d.h BETWEEN 150 AND 299 THEN 500 END, CASE WHEN ${done} AND d.h BETWEEN 150 AND 299 THEN 'Bruch' END,
      CASE WHEN ${done} AND d.h BETWEEN 150 AND 299 THEN d.completed_at - interval '2 minutes' END, d.completed_at,
      CASE WHEN d.mail_sent THEN d.completed_at + interval '6 hours' END,
      -- The review's marker: the removal's or the credit's time (written below), the confirmation's before the last day.
      CASE WHEN ${done} AND d.h < 150 THEN d.completed_at - interval '5 minutes' WHEN ${done} AND d.h < 300 THEN d.completed_at - interval '2 minutes' END,
      CASE WHEN ${done} AND d.h < 300 AND d.tour_date < ${lastDay}::date THEN d.completed_at + interval '2 hours' END,
      d.day_start - interval '1 day', d.updated_at
    FROM h_d d`);
  await tx.execute(sql`INSERT INTO delivery_items SELECT * FROM h_i`);
}

const recorded = (type: string, rows: string) =>
  sql.raw(`INSERT INTO processed_events (event_id, type, client_id, account_id, delivery_id, occurred_at, received_at)
  SELECT event_id, '${type}', 'bench-history', account_id, delivery_id, occurred_at, received_at FROM ${rows}`);

/** What the drivers' work of a completed day left: scans, removals, credits, notes, payments, signatures, completions. */
async function generateWork(tx: Db, lastDay: string, changeLogFrom: string) {
  const run = (body: SQL) => tx.execute(body);
  await run(
    sql`WITH audit AS (INSERT INTO scan_audit (client_scan_id, delivery_id, delivery_item_id, action, quantity, reason,
      scanned_quantity_after, credited_quantity_after, state_after, account_id, author_car_id, occurred_at, received_at)
    SELECT ${idAt("d.completed_at - interval '20 minutes' + i.line_number * interval '1 second'")}, d.id, i.id, 'scan', i.required_quantity, NULL, i.required_quantity, 0, 'Done', d.account_id, d.car_id,
      d.completed_at - interval '20 minutes' + i.line_number * interval '1 second', d.completed_at - interval '20 minutes' + i.line_number * interval '1 second'
    FROM h_d d JOIN h_i i ON i.delivery_id = d.id WHERE i.state = 'Done'
    UNION ALL
    SELECT ${idAt("d.completed_at - interval '5 minutes'")}, d.id, i.id, 'remove', NULL, 'beschädigt', 0, 0, 'Removed', d.account_id, d.car_id,
      d.completed_at - interval '5 minutes', d.completed_at - interval '5 minutes'
    FROM h_d d JOIN h_i i ON i.delivery_id = d.id WHERE i.state = 'Removed'
    RETURNING client_scan_id AS event_id, account_id, delivery_id, occurred_at, received_at)
  `.append(recorded('scan', 'audit')),
  );
  await run(
    sql`WITH credit AS (INSERT INTO credit_events (client_event_id, delivery_id, action, amount_cents, reason, account_id, author_car_id, occurred_at, received_at)
    SELECT ${idAt("d.completed_at - interval '2 minutes'")}, d.id, 'set', 500, 'Bruch', d.account_id, d.car_id, d.completed_at - interval '2 minutes', d.completed_at - interval '2 minutes'
    FROM h_d d WHERE d.h BETWEEN 150 AND 299
    RETURNING client_event_id AS event_id, account_id, delivery_id, occurred_at, received_at)
  `.append(recorded('credit', 'credit')),
  );
  await run(sql`CREATE TEMP TABLE h_n ON COMMIT DROP AS
    SELECT ${idAt("d.completed_at - interval '4 minutes'")} AS id, d.id AS delivery_id, d.account_id, d.car_id,
      CASE WHEN d.h < 150 THEN 'Karton beschädigt' WHEN d.h < 300 THEN 'Gutschrift wegen Bruch' ELSE 'Hintereingang' END AS text,
      i.id AS item_id, d.h BETWEEN 150 AND 299 AS amount, d.completed_at - interval '4 minutes' AS at
    FROM h_d d LEFT JOIN h_i i ON i.delivery_id = d.id AND i.state = 'Removed'`);
  await run(sql`INSERT INTO notes (id, delivery_id, text, author_car_id, credit_delivery_item_id, is_amount_credit_note, created_at, updated_at)
    SELECT id, delivery_id, text, car_id, item_id, amount, at, at FROM h_n`);
  await run(sql`INSERT INTO processed_events (event_id, type, client_id, account_id, delivery_id, occurred_at, received_at)
    SELECT ${idAt('at')}, 'note.create', 'bench-history', account_id, delivery_id, at, at FROM h_n`);
  await run(sql`CREATE TEMP TABLE h_p ON COMMIT DROP AS
    SELECT ${idAt("d.completed_at - interval '1 minute'")} AS id, ${idAt("d.completed_at - interval '1 minute'")} AS event_id, d.id AS delivery_id, (d.n % 3) * 1000 AS amount_cents, d.account_id, d.car_id,
      d.completed_at - interval '1 minute' AS at FROM h_d d`);
  await run(sql`INSERT INTO payment_protocol (id, client_event_id, delivery_id, payment_method_id, payment_method_code, amount_cents,
      account_id, author_car_id, occurred_at, received_at)
    SELECT p.id, p.event_id, p.delivery_id, m.id, m.code, p.amount_cents, p.account_id, p.car_id, p.at, p.at
    FROM h_p p CROSS JOIN (SELECT id, code FROM payment_methods WHERE code = ${PAYMENT_CODE}) AS m`);
  await run(
    sql`${recorded('payment', '(SELECT event_id, account_id, delivery_id, at AS occurred_at, at AS received_at FROM h_p) AS payment')}`,
  );
  // Signatures of 2 KB each (random, as compressed images are), kept in the database; the report in the document store.
  await run(sql`CREATE TEMP TABLE h_a ON COMMIT DROP AS
    SELECT ${idAt('d.completed_at')} AS id, d.id AS delivery_id, k.kind, d.completed_at AS at FROM h_d d
    CROSS JOIN unnest(ARRAY['customer_signature', 'driver_signature', 'delivery_report']) AS k(kind)`);
  await run(sql`INSERT INTO attachments (id, delivery_id, kind, reference, content_type, size_bytes, created_at)
    SELECT id, delivery_id, kind, CASE WHEN kind = 'delivery_report' THEN 'reports/' || id || '.pdf' ELSE '~db/' || id END,
      CASE WHEN kind = 'delivery_report' THEN 'application/pdf' ELSE 'image/png' END, CASE WHEN kind = 'delivery_report' THEN 48000 ELSE 2048 END, at
    FROM h_a`);
  await run(sql`WITH pool AS MATERIALIZED (SELECT i, string_agg(uuid_send(gen_random_uuid()), ''::bytea) AS bytes FROM generate_series(0, 255) AS i
    CROSS JOIN generate_series(1, 128) GROUP BY i)
  INSERT INTO attachment_contents (attachment_id, bytes)
    SELECT a.id, pool.bytes FROM h_a a JOIN pool ON pool.i = (hashtext(a.id::text)::bigint + 2147483648) % 256 WHERE a.kind <> 'delivery_report'`);
  await run(sql`ANALYZE h_n, h_p, h_a`);
  const failing = sql.raw('d.h BETWEEN 9000 AND 9004');
  await run(
    sql`WITH lines AS (SELECT delivery_id, jsonb_agg(jsonb_build_object('lineNumber', line_number, 'articleId', article_id,
      'requiredQuantity', required_quantity, 'scannedQuantity', scanned_quantity, 'state', state) ORDER BY line_number) AS positions
    FROM h_i GROUP BY delivery_id),
  completion AS (INSERT INTO completions (delivery_id, client_event_id, account_id, author_car_id, payment_method_id, payment_id,
      payment_collected, collected_amount_cents, notes_acknowledged, acknowledged_note_ids, customer_signature_id, driver_signature_id,
      report_attachment_id, report_source, completed_at, received_at, erp_push_status, erp_push_attempts, erp_pushed_at, erp_push_error, erp_next_attempt_at)
    SELECT d.id, ${idAt('d.completed_at')}, d.account_id, d.car_id, (SELECT id FROM payment_methods WHERE code = ${PAYMENT_CODE}), p.id, true, p.amount_cents,
      true, jsonb_build_array(n.id), cs.id, ds.id, r.id,
      jsonb_build_object('belegnummer', d.belegnummer, 'completedAt', d.completed_at, 'positions', l.positions),
      d.completed_at, d.completed_at,
      CASE WHEN ${failing} THEN 'failed' ELSE 'succeeded' END, CASE WHEN ${failing} THEN 7 ELSE 1 END,
      CASE WHEN ${failing} THEN NULL ELSE d.completed_at + interval '2 seconds' END, CASE WHEN ${failing} THEN 'ERP: 503 Service Unavailable' END,
      CASE WHEN ${failing} THEN now() + interval '1 day' END
    FROM h_d d JOIN h_p p ON p.delivery_id = d.id JOIN h_n n ON n.delivery_id = d.id JOIN lines l ON l.delivery_id = d.id
    JOIN h_a cs ON cs.delivery_id = d.id AND cs.kind = 'customer_signature'
    JOIN h_a ds ON ds.delivery_id = d.id AND ds.kind = 'driver_signature'
    JOIN h_a r ON r.delivery_id = d.id AND r.kind = 'delivery_report'
    RETURNING client_event_id AS event_id, account_id, delivery_id, completed_at AS occurred_at, received_at)
  `.append(recorded('delivery.complete', 'completion')),
  );
  await run(sql`INSERT INTO review_resolutions (delivery_id, processor, resolved_at)
    SELECT d.id, 'Backoffice', d.completed_at + interval '2 hours' FROM h_d d WHERE d.h < 300 AND d.tour_date < ${lastDay}::date`);
  // The change log holds what its retention keeps: one record per line and delivery for the recent days.
  await run(sql`INSERT INTO change_log (entity, op, entity_id, tour_id, account_id, data, created_at)
    SELECT entity, 'upsert', id, tour_id, account_id, data, at FROM (
      SELECT 'position' AS entity, i.id::text AS id, d.tour_id, d.account_id, to_jsonb(i) AS data, d.completed_at AS at
      FROM h_d d JOIN h_i i ON i.delivery_id = d.id WHERE d.tour_date >= ${changeLogFrom}::date
      UNION ALL
      SELECT 'delivery', d.id::text, d.tour_id, d.account_id, jsonb_build_object('id', d.id, 'belegnummer', d.belegnummer), d.completed_at
      FROM h_d d WHERE d.tour_date >= ${changeLogFrom}::date) AS c ORDER BY at`);
}

/** Completed days: tours, deliveries, lines and every record the day's work left. */
export async function insertCompletedDays(tx: Db, size: CompanySize, dates: string[], lastDay: string, changeLogFrom: string) {
  await generateTours(tx, size, dates, true, lastDay);
  await generateWork(tx, lastDay, changeLogFrom);
  // The list entry's start, as the completion keeps it (the lines' removals are in by now).
  await keepCompletedEntryHead(tx, sql`${deliveries.id} IN (SELECT id FROM h_d)`);
}

/** A day's tours as a morning leaves them: nothing scanned yet. */
export const insertOpenDay = (tx: Db, size: CompanySize, day: string) => generateTours(tx, size, [day], false, day);
