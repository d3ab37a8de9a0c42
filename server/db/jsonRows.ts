import { getTableColumns, type Table } from 'drizzle-orm';

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
