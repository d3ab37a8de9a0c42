// Checks every dependency once and says in words what is wrong: npm run doctor (npm run
// doctor:prod on the build). Reads the same settings as the service and changes nothing but one
// small document it writes to the document store (the same the start's readiness check writes).
// Exit codes: 0 every check passed, 1 a dependency failed, 2 the settings are refused.
import { access, constants, mkdir } from 'node:fs/promises';
import pg from 'pg';
import { pino } from 'pino';
import { createIssuerKeys } from '../auth/issuerKeys.js';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { connectionConfig } from '../db/postgres.js';
import { createErpGateway } from '../integrations/erp/gateway.js';
import { createDocumentStore } from '../integrations/documents/store.js';
import { address, databaseAddress } from '../productionSummary.js';
import { documentStoreCheck } from '../startupChecks.js';

interface Check {
  name: string;
  target: string;
  /** Resolves with what it found (a version, a count), throws what is wrong. */
  run(): Promise<string | void>;
}

const today = () => new Date().toLocaleDateString('sv-SE', { timeZone: 'Europe/Berlin' });

function checks(config: Config): Check[] {
  const list: Check[] = [];
  const url = config.databaseDirectUrl ?? config.databaseUrl;
  if (url) {
    list.push({
      name: 'database',
      target: `PostgreSQL ${databaseAddress(url)}`,
      async run() {
        const client = new pg.Client(connectionConfig(url, config.databaseTimeouts));
        try {
          await client.connect();
          const { rows } = await client.query<{ version: string }>("SELECT current_setting('server_version') AS version");
          return `PostgreSQL ${rows[0].version}`;
        } finally {
          await client.end().catch(() => undefined);
        }
      },
    });
  } else {
    list.push({
      name: 'database',
      target: `PGlite in ${config.dataDir}`,
      async run() {
        await mkdir(config.dataDir, { recursive: true });
        await access(config.dataDir, constants.W_OK);
        return 'the data directory is writable';
      },
    });
  }
  const documents = createDocumentStore(config.documents, config.dataDir);
  list.push({ ...documentStoreCheck(config, documents), name: 'documents' });
  if (config.auth.mode === 'oidc') {
    const keys = createIssuerKeys({
      issuer: () => config.auth.issuer!,
      cooldownMs: 0,
      maxAgeMs: config.auth.jwksMaxAgeMs,
      timeoutMs: config.auth.timeoutMs,
      clockToleranceSeconds: config.auth.clockToleranceSeconds,
    });
    list.push({
      name: 'issuer',
      target: config.auth.issuer!,
      run: async () => {
        await keys.fetch();
        return 'discovery and key set answered';
      },
    });
  }
  if (config.erp.mode === 'http') {
    const erp = createErpGateway(config.erp, pino({ level: 'silent' }));
    list.push({
      name: 'erp',
      target: address(config.erp.baseUrl!),
      run: async () => `${(await erp.fetchTours(today())).tours.length} tours for today`,
    });
  }
  return list;
}

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`The settings are refused: ${error.message}`);
  process.exit(2);
}
let failed = 0;
for (const check of checks(config)) {
  try {
    const found = await check.run();
    console.log(`ok    ${check.name.padEnd(9)} ${check.target}${found ? `: ${found}` : ''}`);
  } catch (error) {
    failed += 1;
    console.log(`FAIL  ${check.name.padEnd(9)} ${check.target}: ${(error as Error).message}`);
  }
}
if (config.auth.mode === 'dev') console.log('note  issuer    the development identity provider inside the service (refused in production)');
if (config.erp.mode === 'demo') console.log('note  erp       the demo ERP inside the service (refused in production)');
console.log(failed ? `${failed} check${failed > 1 ? 's' : ''} failed` : 'every check passed');
process.exit(failed ? 1 : 0);
