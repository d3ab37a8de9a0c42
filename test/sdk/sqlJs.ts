/** A real SQLite engine in Node (sql.js, SQLite compiled to WebAssembly) behind the SDK's SqlDatabase. */
import { createRequire } from 'node:module';
import type { SqlDatabase, SqlValue } from '../../client-sdk/storage/sqlite.js';

interface Statement {
  bind(params: SqlValue[]): void;
  step(): boolean;
  getAsObject(): Record<string, unknown>;
  free(): void;
}
export interface SqlJsDatabase {
  prepare(sql: string): Statement;
  run(sql: string, params?: SqlValue[]): void;
  export(): Uint8Array;
  close(): void;
}
interface SqlJs {
  Database: new (data?: Uint8Array) => SqlJsDatabase;
}

const initSqlJs = createRequire(import.meta.url)('sql.js') as () => Promise<SqlJs>;
const engine = initSqlJs();

/** A database file's bytes (empty: a new database), opened in the engine. */
export async function openSqlJs(data?: Uint8Array): Promise<SqlJsDatabase> {
  return new (await engine).Database(data);
}

/** The glue an app writes for its driver, here for sql.js. */
export function sqlJsDatabase(db: SqlJsDatabase): SqlDatabase {
  return {
    async query(sql, params = []) {
      const statement = db.prepare(sql);
      try {
        statement.bind(params);
        const rows: Record<string, unknown>[] = [];
        while (statement.step()) rows.push(statement.getAsObject());
        return rows;
      } finally {
        statement.free();
      }
    },
    async transaction(statements) {
      db.run('BEGIN');
      try {
        for (const [sql, params] of statements) db.run(sql, params);
        db.run('COMMIT');
      } catch (error) {
        db.run('ROLLBACK');
        throw error;
      }
    },
  };
}
