import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import type { Logger } from 'pino';
import { runBackfills } from './backfills.js';
import type { Db } from './client.js';
import { buildLateIndexes } from './lateIndexes.js';
import { connectAtStart, takeMigrationLock, type DatabaseTimeouts } from './postgres.js';

export const migrationsFolder = fileURLToPath(new URL('../../migrations', import.meta.url));

// Taken around migrations so that instances starting together on one database migrate once.
const MIGRATION_LOCK = 7_230_001;

/**
 * Migrates PostgreSQL, builds the late indexes and runs the backfills, under the migration lock, on a connection of
 * its own to the direct URL: a session lock and DDL need a real session (not a pooler's), and
 * migrations have no statement timeout. It never takes a pooled connection, so a pool of one is
 * free once it is opened. Throws `MigrationLockTimeout` when another session keeps the lock.
 */
export async function migratePostgres(directUrl: string, timeouts: DatabaseTimeouts, logger?: Logger): Promise<void> {
  const client = await connectAtStart(directUrl, timeouts, logger);
  try {
    await takeMigrationLock(client, MIGRATION_LOCK, timeouts.migrationLockMs, logger);
    const db = drizzle({ client });
    await migrate(db, { migrationsFolder });
    await buildLateIndexes((text, values) => client.query(text, values), true);
    // After the migrations' transaction has committed: a batch at a time, the old release writing on.
    await runBackfills(db as unknown as Db, { logger });
  } finally {
    // Ending the session releases the lock.
    await client.end().catch(() => undefined);
  }
}
