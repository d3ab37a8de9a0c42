import pg from 'pg';
import { startEmbeddedPostgres } from '../helpers/embeddedPostgres.js';

export interface PostgresCluster {
  /** A URL with rights to create databases. */
  adminUrl: string;
  /** How the cluster is configured, for the results table. */
  settings: string;
  /** A fresh, empty database; every scenario gets its own. */
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

/**
 * PostgreSQL for measuring: DATABASE_URL when set, else an embedded server with durable
 * settings (fsync and synchronous_commit on, as in production); only the memory and connection
 * limits are raised from the defaults.
 */
export async function startPostgres(): Promise<PostgresCluster> {
  if (process.env.DATABASE_URL) {
    return {
      adminUrl: process.env.DATABASE_URL,
      settings: 'DATABASE_URL',
      createDatabase: (name) => createDatabase(process.env.DATABASE_URL!, name),
      stop: async () => undefined,
    };
  }
  const flags = ['max_connections=300', 'shared_buffers=256MB', 'max_wal_size=2GB'];
  const postgres = await startEmbeddedPostgres({ prefix: 'tourline-bench-pg-', settings: flags }).catch((error: Error) => {
    // The message names the cause and the way out; a stack trace would only bury it.
    console.error(error.message);
    return process.exit(1);
  });
  return {
    adminUrl: postgres.adminUrl,
    settings: `embedded, fsync on, synchronous_commit on, ${flags.join(', ')}`,
    createDatabase: (name) => createDatabase(postgres.adminUrl, name),
    stop: () => postgres.stop(),
  };
}

async function createDatabase(adminUrl: string, name: string): Promise<string> {
  const database = `bench_${name}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}
