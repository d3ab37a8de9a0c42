import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../../server/db/client.js';
import { address } from './erpData.js';

/** A company's shape: drivers, deliveries per tour, lines per delivery. */
export interface CompanySize {
  drivers: number;
  deliveries: number;
  positions: number;
}

export const FIRST_DRIVER = 70_001;
const WAREHOUSES = ['HL', 'KL', 'AL', 'NL'];
const ARTICLES = 800;
const CUSTOMERS = 2000;
const PAYMENT_CODE = 'BENCH-BAR';
/** An array as one parameter (drizzle spreads a JavaScript array into a list); for codes and dates, which need no quoting. */
const pgArray = (values: string[]) => `{${values.join(',')}}`;

/**
 * The master data of the bench's ERP days (`largeErpDay`): the same warehouses, articles,
 * customers and drivers, so that an import on top of the history finds them unchanged.
 */
export async function loadMasterData(db: Db, size: CompanySize): Promise<void> {
  const json = (rows: unknown[]) => JSON.stringify(rows);
  await db.transaction(async (tx) => {
    await tx.execute(sql`INSERT INTO warehouses (code, name)
      SELECT code, 'Lager ' || code FROM unnest(${pgArray(WAREHOUSES)}::text[]) AS code ON CONFLICT DO NOTHING`);
    await tx.execute(sql`INSERT INTO articles (article_number, name, scannable, default_warehouse_id)
      SELECT 'ART-' || a, 'Artikel ' || a, a % 10 <> 0, w.id FROM generate_series(0, ${ARTICLES - 1}) AS a
      JOIN warehouses w ON w.code = (${pgArray(WAREHOUSES)}::text[])[a % 4 + 1] ON CONFLICT DO NOTHING`);
    const customers = Array.from({ length: CUSTOMERS }, (_, i) => ({
      erp: 500_000 + i,
      name: `Kunde ${500_000 + i}`,
      address: address(500_000 + i),
    }));
    await tx.execute(sql`INSERT INTO customers (erp_customer_id, name, address)
      SELECT erp, name, address FROM jsonb_to_recordset(${json(customers)}::jsonb) AS v(erp bigint, name text, address jsonb) ON CONFLICT DO NOTHING`);
    await tx.execute(sql`INSERT INTO accounts (personalnummer, name)
      SELECT n, 'Fahrer ' || n FROM generate_series(${FIRST_DRIVER}::bigint, ${FIRST_DRIVER + size.drivers - 1}::bigint) AS n ON CONFLICT DO NOTHING`);
    await tx.execute(sql`INSERT INTO cars (account_id, plate, plate_key)
      SELECT a.personalnummer, 'B-TL ' || a.personalnummer, 'b-tl ' || a.personalnummer FROM accounts a
      WHERE a.personalnummer BETWEEN ${FIRST_DRIVER} AND ${FIRST_DRIVER + size.drivers - 1} ON CONFLICT DO NOTHING`);
    await tx.execute(
      sql`INSERT INTO payment_methods (code, name, collect_on_site) VALUES (${PAYMENT_CODE}, 'Barzahlung', true) ON CONFLICT DO NOTHING`,
    );
  });
}

/** The `count` working days (Monday to Friday) before `day`, oldest first. */
export function workingDaysBefore(day: string, count: number): string[] {
  const days: string[] = [];
  const date = new Date(`${day}T12:00:00Z`);
  while (days.length < count) {
    date.setUTCDate(date.getUTCDate() - 1);
    if (date.getUTCDay() !== 0 && date.getUTCDay() !== 6) days.unshift(date.toISOString().slice(0, 10));
  }
  return days;
}

/** `WITH chunk AS (the deliveries of these days, with their number in the day n and their pick h) body` */
function inChunk(size: CompanySize, dates: string[], body: SQL): SQL {
  return sql`WITH chunk AS MATERIALIZED (
    SELECT d.id, d.tour_id, d.belegnummer, d.completed_at, d.updated_at, d.erp_open_amount_cents, d.assigned_car_id,
      d.payment_method_id, t.account_id, t.tour_date, (t.account_id - ${FIRST_DRIVER}) * ${size.deliveries} + d.sort_order - 1 AS n,
      (hashtext(d.belegnummer)::bigint + 2147483648) % 10000 AS h
    FROM tours t JOIN deliveries d ON d.tour_id = t.id
    WHERE t.tour_date = ANY(${pgArray(dates)}::date[]) AND t.account_id BETWEEN ${FIRST_DRIVER} AND ${FIRST_DRIVER + size.drivers - 1})
  `.append(body);
}

/**
 * The tours of `dates` for every driver with their deliveries and lines: completed as a day's
 * work leaves them, or active as a morning's. Of the completed deliveries, the pick h chooses
 * the few that deviate (h < 150 a removed line, h < 300 a money credit), whose write-back still
 * fails (9000 ≤ h < 9005) and whose mail is still open (h ≥ 9995; on the last day all of them).
 */
async function insertTours(tx: Db, size: CompanySize, dates: string[], completed: boolean, lastDay: string) {
  const lastDriver = FIRST_DRIVER + size.drivers - 1;
  const done = sql.raw(String(completed));
  await tx.execute(sql`INSERT INTO tours (account_id, tour_date, name)
    SELECT a, d, 'Tour ' || (a - ${FIRST_DRIVER - 1}) FROM unnest(${pgArray(dates)}::date[]) AS d
    CROSS JOIN generate_series(${FIRST_DRIVER}::bigint, ${lastDriver}::bigint) AS a ON CONFLICT DO NOTHING`);
  await tx.execute(sql`INSERT INTO deliveries (tour_id, belegart_id, belegnummer, customer_id, delivery_address, state, sort_order,
      erp_sequence, erp_open_amount_cents, payment_method_id, payment_term, assigned_car_id, credit_amount_cents, credit_reason,
      credit_updated_at, completed_at, mail_sent_at, created_at, updated_at)
    SELECT t.id, 20, v.belegnummer, c.id, c.address, ${completed ? 'completed' : 'active'}, s, s * 10, (v.n % 3) * 1000, pm.id, '14 Tage netto', car.id,
      CASE WHEN ${done} AND v.h BETWEEN 150 AND 299 THEN 500 END, CASE WHEN ${done} AND v.h BETWEEN 150 AND 299 THEN 'Bruch' END,
      CASE WHEN ${done} AND v.h BETWEEN 150 AND 299 THEN v.done - interval '2 minutes' END,
      CASE WHEN ${done} THEN v.done END,
      CASE WHEN ${done} AND t.tour_date < ${lastDay}::date AND v.h < 9995 THEN v.done + interval '6 hours' END,
      v.day_start - interval '1 day', CASE WHEN ${done} THEN v.done ELSE v.day_start END
    FROM tours t CROSS JOIN generate_series(1, ${size.deliveries}) AS s
    CROSS JOIN LATERAL (SELECT (t.account_id - ${FIRST_DRIVER}) * ${size.deliveries} + s - 1 AS n,
      'H' || to_char(t.tour_date, 'YYYYMMDD') || '-' || (t.account_id - ${FIRST_DRIVER - 1}) || '-' || s AS belegnummer,
      (t.tour_date + time '07:00') AT TIME ZONE 'Europe/Berlin' AS day_start,
      (t.tour_date + time '07:30' + s * interval '12 minutes') AT TIME ZONE 'Europe/Berlin' AS done) AS v0
    CROSS JOIN LATERAL (SELECT v0.*, (hashtext(v0.belegnummer)::bigint + 2147483648) % 10000 AS h) AS v
    JOIN customers c ON c.erp_customer_id = 500000 + (v.n * 7919) % ${CUSTOMERS}
    JOIN payment_methods pm ON pm.code = ${PAYMENT_CODE}
    JOIN cars car ON car.account_id = t.account_id
    WHERE t.tour_date = ANY(${pgArray(dates)}::date[]) AND t.account_id BETWEEN ${FIRST_DRIVER} AND ${lastDriver}
    ON CONFLICT DO NOTHING`);
  await tx.execute(
    inChunk(
      size,
      dates,
      sql`INSERT INTO delivery_items (delivery_id, line_number, article_id, warehouse_id,
      required_quantity, scanned_quantity, state, unit, unit_price_cents, updated_at)
    SELECT d.id, p * 10, a.id, a.default_warehouse_id, v.q,
      CASE WHEN v.removed OR NOT ${done} OR NOT a.scannable THEN 0 ELSE v.q END,
      CASE WHEN v.removed THEN 'Removed' WHEN ${done} AND a.scannable THEN 'Done' ELSE 'InProgress' END,
      'Stk', 100 + v.article, d.updated_at
    FROM chunk d CROSS JOIN generate_series(1, ${size.positions}) AS p
    CROSS JOIN LATERAL (SELECT (d.n * 31 + p * 17) % ${ARTICLES} AS article, 1 + (d.n + p) % 12 AS q, ${done} AND p = 1 AND d.h < 150 AS removed) AS v
    JOIN articles a ON a.article_number = 'ART-' || v.article
    ON CONFLICT DO NOTHING`,
    ),
  );
  // Statistics for the rows just written: planned on those of a near-empty table, the joins on them
  // ran as nested loops over sequential scans, for an hour.
  await tx.execute(sql`ANALYZE deliveries, delivery_items`);
}

const recorded = (type: string, rows: string) =>
  sql.raw(`INSERT INTO processed_events (event_id, type, client_id, account_id, delivery_id, occurred_at, received_at)
  SELECT event_id, '${type}', 'bench-history', account_id, delivery_id, occurred_at, received_at FROM ${rows}`);

/** What the drivers' work of a completed day left: scans, removals, credits, notes, payments, signatures, completions. */
async function insertWork(tx: Db, size: CompanySize, dates: string[], lastDay: string, changeLogFrom: string) {
  const chunk = (body: SQL) => tx.execute(inChunk(size, dates, body));
  await chunk(
    sql`, audit AS (INSERT INTO scan_audit (client_scan_id, delivery_id, delivery_item_id, action, quantity, reason,
      scanned_quantity_after, credited_quantity_after, state_after, account_id, author_car_id, occurred_at, received_at)
    SELECT gen_random_uuid(), d.id, i.id, 'scan', i.required_quantity, NULL, i.required_quantity, 0, 'Done', d.account_id, d.assigned_car_id,
      d.completed_at - interval '20 minutes' + i.line_number * interval '1 second', d.completed_at - interval '20 minutes' + i.line_number * interval '1 second'
    FROM chunk d JOIN delivery_items i ON i.delivery_id = d.id WHERE i.state = 'Done'
    UNION ALL
    SELECT gen_random_uuid(), d.id, i.id, 'remove', NULL, 'beschädigt', 0, 0, 'Removed', d.account_id, d.assigned_car_id,
      d.completed_at - interval '5 minutes', d.completed_at - interval '5 minutes'
    FROM chunk d JOIN delivery_items i ON i.delivery_id = d.id WHERE i.state = 'Removed'
    RETURNING client_scan_id AS event_id, account_id, delivery_id, occurred_at, received_at)
  `.append(recorded('scan', 'audit')),
  );
  await chunk(
    sql`, credit AS (INSERT INTO credit_events (client_event_id, delivery_id, action, amount_cents, reason, account_id, author_car_id, occurred_at, received_at)
    SELECT gen_random_uuid(), d.id, 'set', 500, 'Bruch', d.account_id, d.assigned_car_id, d.completed_at - interval '2 minutes', d.completed_at - interval '2 minutes'
    FROM chunk d WHERE d.h BETWEEN 150 AND 299
    RETURNING client_event_id AS event_id, account_id, delivery_id, occurred_at, received_at)
  `.append(recorded('credit', 'credit')),
  );
  await chunk(sql`INSERT INTO notes (delivery_id, text, author_car_id, credit_delivery_item_id, is_amount_credit_note, created_at, updated_at)
    SELECT d.id, CASE WHEN d.h < 150 THEN 'Karton beschädigt' WHEN d.h < 300 THEN 'Gutschrift wegen Bruch' ELSE 'Hintereingang' END, d.assigned_car_id,
      CASE WHEN d.h < 150 THEN (SELECT i.id FROM delivery_items i WHERE i.delivery_id = d.id AND i.state = 'Removed') END,
      d.h BETWEEN 150 AND 299, d.completed_at - interval '4 minutes', d.completed_at - interval '4 minutes'
    FROM chunk d`);
  await chunk(sql`INSERT INTO processed_events (event_id, type, client_id, account_id, delivery_id, occurred_at, received_at)
    SELECT gen_random_uuid(), 'note.create', 'bench-history', d.account_id, d.id, n.created_at, n.created_at FROM chunk d JOIN notes n ON n.delivery_id = d.id`);
  await chunk(
    sql`, payment AS (INSERT INTO payment_protocol (client_event_id, delivery_id, payment_method_id, payment_method_code, amount_cents,
      account_id, author_car_id, occurred_at, received_at)
    SELECT gen_random_uuid(), d.id, d.payment_method_id, ${PAYMENT_CODE}, d.erp_open_amount_cents, d.account_id, d.assigned_car_id,
      d.completed_at - interval '1 minute', d.completed_at - interval '1 minute'
    FROM chunk d RETURNING client_event_id AS event_id, account_id, delivery_id, occurred_at, received_at)
  `.append(recorded('payment', 'payment')),
  );
  // Signatures of 2 KB each (random, as compressed images are), kept in the database; the report in the document store.
  await chunk(sql`, attachment AS (INSERT INTO attachments (id, delivery_id, kind, reference, content_type, size_bytes, created_at)
    SELECT x.id, x.delivery_id, x.kind, CASE WHEN x.kind = 'delivery_report' THEN 'reports/' || x.id || '.pdf' ELSE '~db/' || x.id END,
      CASE WHEN x.kind = 'delivery_report' THEN 'application/pdf' ELSE 'image/png' END, CASE WHEN x.kind = 'delivery_report' THEN 48000 ELSE 2048 END, x.at
    FROM (SELECT gen_random_uuid() AS id, d.id AS delivery_id, k.kind, d.completed_at AS at FROM chunk d
      CROSS JOIN unnest(ARRAY['customer_signature', 'driver_signature', 'delivery_report']) AS k(kind)) AS x
    RETURNING id, kind),
  pool AS MATERIALIZED (SELECT i, string_agg(uuid_send(gen_random_uuid()), ''::bytea) AS bytes FROM generate_series(0, 255) AS i
    CROSS JOIN generate_series(1, 128) GROUP BY i)
  INSERT INTO attachment_contents (attachment_id, bytes)
    SELECT a.id, pool.bytes FROM attachment a JOIN pool ON pool.i = (hashtext(a.id::text)::bigint + 2147483648) % 256 WHERE a.kind <> 'delivery_report'`);
  await tx.execute(sql`ANALYZE payment_protocol, notes, attachments`);
  const failing = sql.raw('d.h BETWEEN 9000 AND 9004');
  await chunk(
    sql`, completion AS (INSERT INTO completions (delivery_id, client_event_id, account_id, author_car_id, payment_method_id, payment_id,
      payment_collected, collected_amount_cents, notes_acknowledged, acknowledged_note_ids, customer_signature_id, driver_signature_id,
      report_attachment_id, report_source, completed_at, received_at, erp_push_status, erp_push_attempts, erp_pushed_at, erp_push_error, erp_next_attempt_at)
    SELECT d.id, gen_random_uuid(), d.account_id, d.assigned_car_id, d.payment_method_id, p.id, true, p.amount_cents, true, jsonb_build_array(n.id),
      cs.id, ds.id, r.id,
      jsonb_build_object('belegnummer', d.belegnummer, 'completedAt', d.completed_at, 'positions', (SELECT jsonb_agg(jsonb_build_object(
        'lineNumber', i.line_number, 'articleId', i.article_id, 'requiredQuantity', i.required_quantity, 'scannedQuantity', i.scanned_quantity,
        'state', i.state) ORDER BY i.line_number) FROM delivery_items i WHERE i.delivery_id = d.id)),
      d.completed_at, d.completed_at,
      CASE WHEN ${failing} THEN 'failed' ELSE 'succeeded' END, CASE WHEN ${failing} THEN 7 ELSE 1 END,
      CASE WHEN ${failing} THEN NULL ELSE d.completed_at + interval '2 seconds' END, CASE WHEN ${failing} THEN 'ERP: 503 Service Unavailable' END,
      CASE WHEN ${failing} THEN now() + interval '1 day' END
    FROM chunk d JOIN payment_protocol p ON p.delivery_id = d.id JOIN notes n ON n.delivery_id = d.id
    JOIN attachments cs ON cs.delivery_id = d.id AND cs.kind = 'customer_signature'
    JOIN attachments ds ON ds.delivery_id = d.id AND ds.kind = 'driver_signature'
    JOIN attachments r ON r.delivery_id = d.id AND r.kind = 'delivery_report'
    RETURNING client_event_id AS event_id, account_id, delivery_id, completed_at AS occurred_at, received_at)
  `.append(recorded('delivery.complete', 'completion')),
  );
  await chunk(sql`INSERT INTO review_resolutions (delivery_id, processor, resolved_at)
    SELECT d.id, 'Backoffice', d.completed_at + interval '2 hours' FROM chunk d WHERE d.h < 300 AND d.tour_date < ${lastDay}::date`);
  // The change log holds what its retention keeps: one record per line and delivery for the recent days.
  await chunk(sql`INSERT INTO change_log (entity, op, entity_id, tour_id, account_id, data, created_at)
    SELECT entity, 'upsert', id, tour_id, account_id, data, at FROM (
      SELECT 'position' AS entity, i.id::text AS id, d.tour_id, d.account_id, to_jsonb(i) AS data, d.completed_at AS at
      FROM chunk d JOIN delivery_items i ON i.delivery_id = d.id WHERE d.tour_date >= ${changeLogFrom}::date
      UNION ALL
      SELECT 'delivery', d.id::text, d.tour_id, d.account_id, jsonb_build_object('id', d.id, 'belegnummer', d.belegnummer), d.completed_at
      FROM chunk d WHERE d.tour_date >= ${changeLogFrom}::date) AS c ORDER BY at`);
}

export interface HistoryLoad {
  /** The history's working days to add (any order), the last of all history days, and the first day the change log still holds. */
  dates: string[];
  lastDay: string;
  changeLogFrom: string;
  /** Days per transaction. */
  daysPerChunk?: number;
  onChunk?: (done: number, total: number) => void;
}

/** Completed days of history, a transaction per chunk of days. */
export async function loadHistory(db: Db, size: CompanySize, load: HistoryLoad): Promise<void> {
  const perChunk = load.daysPerChunk ?? 10;
  for (let first = 0; first < load.dates.length; first += perChunk) {
    const dates = load.dates.slice(first, first + perChunk);
    await db.transaction(async (tx) => {
      await insertTours(tx, size, dates, true, load.lastDay);
      await insertWork(tx, size, dates, load.lastDay, load.changeLogFrom);
    });
    load.onChunk?.(Math.min(first + perChunk, load.dates.length), load.dates.length);
  }
}

/** Today's tours, not started yet. */
export async function loadToday(db: Db, size: CompanySize, today: string): Promise<void> {
  await db.transaction((tx) => insertTours(tx, size, [today], false, today));
}
