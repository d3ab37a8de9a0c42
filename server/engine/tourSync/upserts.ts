import { getTableColumns, sql, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';

// Set-based writes that touch a row only when one of the columns the ERP mirrors differs.

const now = sql`now()`;
const excluded = (column: PgColumn) => sql.raw(`excluded."${column.name}"`);

const columnKeys = new WeakMap<PgColumn[], string[]>();

/** The property names of table columns in drizzle rows. */
function keysOf(columns: PgColumn[]): string[] {
  let keys = columnKeys.get(columns);
  if (!keys) {
    const keyOf = new Map(Object.entries(getTableColumns(columns[0].table)).map(([key, column]) => [column as PgColumn, key]));
    keys = columns.map((column) => keyOf.get(column)!);
    columnKeys.set(columns, keys);
  }
  return keys;
}

/** `set` and `setWhere` of an upsert that writes (and returns) a row only when one of the columns differs. */
export function whenChanged(columns: PgColumn[]): { set: Record<string, SQL>; setWhere: SQL } {
  const set: Record<string, SQL> = { updatedAt: now };
  for (const [i, key] of keysOf(columns).entries()) set[key] = excluded(columns[i]);
  const currentValues = sql.join(
    columns.map((c) => sql`${c}`),
    sql`, `,
  );
  const incoming = sql.join(columns.map(excluded), sql`, `);
  return { set, setWhere: sql`(${currentValues}) IS DISTINCT FROM (${incoming})` };
}

/** Equal as stored: objects (addresses) compared by content, whatever their key order. */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!a || !b || typeof a !== 'object' || typeof b !== 'object') return (a ?? null) === (b ?? null);
  const canonical = (v: object) => JSON.stringify(v, Object.keys(v).sort());
  return canonical(a) === canonical(b);
}

/** Whether an incoming row needs a write: there is no stored one, or it differs in one of the columns. */
export function differs(stored: object | undefined, incoming: object, columns: PgColumn[]): boolean {
  return (
    !stored ||
    keysOf(columns).some((key) => !sameValue((stored as Record<string, unknown>)[key], (incoming as Record<string, unknown>)[key]))
  );
}

/** Several hundred rows per statement keep far below PostgreSQL's limit of 65535 parameters. */
function chunks<T>(rows: T[], size = 500): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}

export async function insertAll<T>(rows: unknown[], write: (chunk: never[]) => Promise<T[]>): Promise<T[]> {
  const out: T[] = [];
  for (const chunk of chunks(rows)) out.push(...(await write(chunk as never[])));
  return out;
}

/** Last occurrence wins, sorted by key so concurrent syncs lock shared rows in the same order. */
export function byKey<T, K extends string | number>(rows: T[], key: (row: T) => K): T[] {
  const map = new Map<K, T>();
  for (const row of rows) map.set(key(row), row);
  return [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
}

export interface Upserted<Row, K> {
  /** Every incoming row as stored now. */
  rows: Row[];
  /** The rows this upsert wrote. */
  changed: Row[];
  /** The rows as they were stored before, by key. */
  before: Map<K, Row>;
}

/**
 * Upserts master data by key, writing only rows that are new or differ in `columns` from what is
 * stored: an unchanged row is neither written nor locked, so imports of tours sharing a catalogue
 * do not queue behind each other's row locks.
 */
export async function upsertChanged<In extends object, Row extends In, K extends string | number>(
  input: In[],
  keyOf: (row: In) => K,
  columns: PgColumn[],
  load: (keys: K[]) => Promise<Row[]>,
  write: (rows: In[]) => Promise<Row[]>,
): Promise<Upserted<Row, K>> {
  if (input.length === 0) return { rows: [], changed: [], before: new Map() };
  const rows = new Map((await load(input.map(keyOf))).map((row) => [keyOf(row), row]));
  const before = new Map(rows);
  const toWrite = input.filter((incoming) => differs(rows.get(keyOf(incoming)), incoming, columns));
  const changed = await insertAll(toWrite, write as (chunk: never[]) => Promise<Row[]>);
  for (const row of changed) rows.set(keyOf(row), row);
  // A row another import inserted with the same values meanwhile is not returned by our upsert.
  const missing = input.map(keyOf).filter((key) => !rows.has(key));
  if (missing.length) for (const row of await load(missing)) rows.set(keyOf(row), row);
  return { rows: [...rows.values()], changed, before };
}
