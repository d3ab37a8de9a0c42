import { getTableColumns, sql, type SQL, type Table } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';

type Reader = [key: string, name: string, map: (value: unknown) => unknown][];
const readers = new WeakMap<Table, Reader>();

function readerOf(table: Table): Reader {
  let reader = readers.get(table);
  if (!reader) {
    reader = Object.entries(getTableColumns(table)).map(([key, column]) => [key, column.name, (value) => column.mapFromDriverValue(value)]);
    readers.set(table, reader);
  }
  return reader;
}

/**
 * Rows that PostgreSQL sent as JSON objects (`json_agg(t)`), in the shape a drizzle select of
 * the table answers: keys renamed, timestamps made Dates by the columns' own mappings. Lets one
 * statement bring back the rows of several tables.
 */
export function fromJsonRows<T extends Table>(table: T, rows: Record<string, unknown>[] | null | undefined): T['$inferSelect'][] {
  if (!rows) return [];
  const reader = readerOf(table);
  return rows.map((json) => {
    const row: Record<string, unknown> = {};
    for (const [key, name, map] of reader) {
      const value = json[name];
      row[key] = value === null || value === undefined ? null : map(value);
    }
    return row as T['$inferSelect'];
  });
}

/**
 * The values as ONE array parameter of the given SQL type. drizzle's `inArray` makes a parameter
 * per value, and building a statement of thousands of them costs more than running it; for lists
 * that grow with a batch's events. An array (unlike a set-returning function over a JSON list)
 * tells the planner how many values there are, so it looks them up by index.
 */
export function arrayOf(values: readonly (string | number)[], type: string): SQL {
  return sql`${arrayLiteral(values)}::${sql.raw(type)}[]`;
}

/** The values, without repeats, as the text of a PostgreSQL array: one parameter, cast to its type in the statement. */
export const arrayLiteral = (values: readonly (string | number)[]): string =>
  `{${[...new Set(values)].map((v) => `"${String(v).replace(/["\\]/g, '\\$&')}"`).join(',')}}`;

/** `column = ANY(values)`, the values as one array parameter (see `arrayOf`). */
export const inList = (column: PgColumn, values: readonly (string | number)[]): SQL =>
  sql`${column} = ANY(${arrayOf(values, column.getSQLType())})`;

/** `column = ANY(placeholder)`: `inList` for a statement built once, the values bound as `arrayLiteral(values)` under `key`. */
export const inPlaceholder = (column: PgColumn, key: string): SQL =>
  sql`${column} = ANY(${sql.placeholder(key)}::${sql.raw(column.getSQLType())}[])`;
