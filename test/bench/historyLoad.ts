import { sql } from 'drizzle-orm';
import type { Db } from '../../server/db/client.js';
import { address } from './erpData.js';

import {
  ARTICLES,
  CUSTOMERS,
  FIRST_DRIVER,
  insertCompletedDays,
  insertOpenDay,
  PAYMENT_CODE,
  pgArray,
  type CompanySize,
} from './historyDays.js';

export { FIRST_DRIVER, type CompanySize };
const WAREHOUSES = ['HL', 'KL', 'AL', 'NL'];

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

export interface HistoryLoad {
  /** The history's working days to add (any order), the last of all history days, and the first day the change log still holds. */
  dates: string[];
  lastDay: string;
  changeLogFrom: string;
  /** Days per transaction. */
  daysPerChunk?: number;
  onChunk?: (done: number, total: number) => void;
}

/** The tables a day of history writes. */
const HISTORY_TABLES = [
  'tours',
  'deliveries',
  'delivery_items',
  'scan_audit',
  'credit_events',
  'notes',
  'payment_protocol',
  'attachments',
  'attachment_contents',
  'completions',
  'review_resolutions',
  'processed_events',
  'change_log',
];

/**
 * Indexes the load's own statements read: the completed entry's start (engine/completedEntries.ts)
 * probes each delivery's lines, which without this index is a scan of every line per delivery.
 */
const KEPT_INDEXES = ['delivery_items_line_uq'];

/**
 * Runs `load` with the secondary indexes of the history's tables dropped, then builds them again
 * from their own definitions, as they were (pg_restore's order: data, then indexes). Keeping up
 * indexes of random keys row by row is what made a day cost more the more history there was. The
 * primary keys, the indexes that constraints use and `KEPT_INDEXES` stay. PostgreSQL only.
 */
async function withoutSecondaryIndexes(db: Db, load: () => Promise<void>): Promise<void> {
  const { rows } = await db.execute<{ name: string; definition: string }>(sql`
    SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS definition FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = current_schema() AND t.relname = ANY(${pgArray(HISTORY_TABLES)}::text[])
      AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
      AND c.relname <> ALL(${pgArray(KEPT_INDEXES)}::text[])`);
  for (const index of rows) await db.execute(sql.raw(`DROP INDEX ${index.name}`));
  try {
    await load();
  } finally {
    await db.transaction(async (tx) => {
      await tx.execute(sql`SET LOCAL maintenance_work_mem = '512MB'`);
      for (const index of rows) await tx.execute(sql.raw(index.definition));
    });
  }
}

/**
 * Completed days of history, a transaction per chunk of days, then ANALYZE. The rows are
 * consistent by construction: as pg_restore does, a superuser loads them without the foreign
 * keys' per-row triggers (the constraints stay defined).
 */
export async function loadHistory(db: Db, size: CompanySize, load: HistoryLoad): Promise<void> {
  const perChunk = load.daysPerChunk ?? 10;
  const [{ superuser }] = (
    await db.execute<{ superuser: boolean }>(sql`SELECT rolsuper AS superuser FROM pg_roles WHERE rolname = current_user`)
  ).rows;
  await withoutSecondaryIndexes(db, async () => {
    for (let first = 0; first < load.dates.length; first += perChunk) {
      const dates = load.dates.slice(first, first + perChunk);
      await db.transaction(async (tx) => {
        await tx.execute(sql`SET LOCAL synchronous_commit = off`);
        if (superuser) await tx.execute(sql`SET LOCAL session_replication_role = replica`);
        await insertCompletedDays(tx, size, dates, load.lastDay, load.changeLogFrom);
      });
      load.onChunk?.(Math.min(first + perChunk, load.dates.length), load.dates.length);
    }
  });
  await db.execute(sql`VACUUM ANALYZE`);
}

/** Today's tours, not started yet. */
export async function loadToday(db: Db, size: CompanySize, today: string): Promise<void> {
  await db.transaction((tx) => insertOpenDay(tx, size, today));
}
