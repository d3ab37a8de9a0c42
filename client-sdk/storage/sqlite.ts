import type { KeyValueStore, KeyValueWrite } from './keyValue.js';

export type SqlValue = string | number | null;

/**
 * The few calls the store needs from a SQLite driver. expo-sqlite and op-sqlite each give them
 * in a few lines (the package README shows both); sql.js and better-sqlite3 as well.
 */
export interface SqlDatabase {
  /** Runs one statement and answers its rows as objects keyed by column name. */
  query(sql: string, params?: SqlValue[]): Promise<Record<string, unknown>[]>;
  /** Runs the statements in one transaction: all of them, or none. */
  transaction(statements: [sql: string, params: SqlValue[]][]): Promise<void>;
}

const TABLE = 'tourline_kv';
const upsert = `INSERT INTO ${TABLE} (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
const remove = `DELETE FROM ${TABLE} WHERE key = ?`;

/** A KeyValueStore in one SQLite table; a batch is one transaction. */
export class SqliteStore implements KeyValueStore {
  private constructor(private readonly db: SqlDatabase) {}

  static async open(db: SqlDatabase): Promise<SqliteStore> {
    await db.query(`CREATE TABLE IF NOT EXISTS ${TABLE} (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)`);
    return new SqliteStore(db);
  }

  async get(key: string) {
    const [row] = await this.db.query(`SELECT value FROM ${TABLE} WHERE key = ?`, [key]);
    return row === undefined ? undefined : String(row.value);
  }

  async set(key: string, value: string) {
    await this.db.query(upsert, [key, value]);
  }
  async delete(key: string) {
    await this.db.query(remove, [key]);
  }

  batch(writes: KeyValueWrite[]) {
    return this.db.transaction(writes.map(({ key, value }) => (value === undefined ? [remove, [key]] : [upsert, [key, value]])));
  }

  async keys(prefix = '') {
    // substr (in code points), not LIKE: a prefix may hold % and _. Sorted here, as JavaScript compares strings.
    const rows = await this.db.query(`SELECT key FROM ${TABLE} WHERE substr(key, 1, ?) = ?`, [[...prefix].length, prefix]);
    return rows.map((r) => String(r.key)).sort();
  }
}
