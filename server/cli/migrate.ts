// Applies the migrations and exits: npm run migrate (npm run migrate:prod on the build), for
// deployments that migrate in a job before the new version starts. Reads only the database
// settings (DATABASE_DIRECT_URL, else DATABASE_URL; PGlite in DATA_DIR without either).
// Exit codes: 0 migrated (or nothing to do), 2 another session kept the migration lock past
// DATABASE_MIGRATION_LOCK_TIMEOUT_MS (try again later), 1 anything else (configuration, database).
import { pino } from 'pino';
import { ConfigError, loadDatabaseConfig } from '../config.js';
import { openDatabase } from '../db/client.js';
import { migratePostgres } from '../db/migrate.js';
import { MigrationLockTimeout } from '../db/postgres.js';

let config;
try {
  config = loadDatabaseConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(error.message);
  process.exit(1);
}
const logger = pino({ level: config.logLevel });
try {
  if (config.databaseDirectUrl) await migratePostgres(config.databaseDirectUrl, config.databaseTimeouts, logger);
  else await (await openDatabase({ dataDir: config.dataDir, logger })).close();
  logger.info('migrations applied');
} catch (error) {
  console.error(`Migration failed: ${(error as Error).message}`);
  process.exit(error instanceof MigrationLockTimeout ? 2 : 1);
}
