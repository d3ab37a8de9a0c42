import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { AdminApi } from '../client-sdk/api.js';
import type { SyncTourInput, SyncTourResponse } from '../shared/schemas/tours.js';
import { loadConfig } from '../server/config.js';
import { migratedPgliteImage, openDatabase, type Database } from '../server/db/client.js';
import { accounts } from '../server/db/schema.js';
import { startServer, type RunningServer } from '../server/server.js';
import type { TypedAdmin } from './admin.js';
import { TestClock, type ClockControl } from './clock.js';
import { TestErp, type ErpControl } from './erp.js';
import { FaultyNetwork, type NetworkControl } from './network.js';
import { waitForSettled, type SettledEvent } from './settle.js';

export interface TestServerOptions {
  /** Tours sent to `POST /sync/tour` before the start resolves (`demoTour()` builds them). */
  tours?: SyncTourInput[];
  /** Where the service's clock stands; default: it runs with real time. */
  now?: Date | string | number;
  /** Further settings of the service, as its environment variables (the service's README lists them). */
  settings?: Record<string, string>;
}

export interface TestTourline {
  /** Where the app connects (HTTP and WebSocket): through `network`'s faults. */
  readonly url: string;
  /** The service itself, past the faults. */
  readonly serviceUrl: string;
  /** The back-office key (`X-Admin-Api-Key`). */
  readonly adminKey: string;
  /** The back-office API, typed, straight to the service. */
  readonly admin: TypedAdmin;
  readonly clock: ClockControl;
  readonly network: NetworkControl;
  readonly erp: ErpControl;
  /** A driver's token from the service's development identity provider; the account is created if missing. */
  tokenFor(personalnummer: number, options?: { roles?: string[] }): Promise<string>;
  /** Creates or updates a tour as the ERP import does (`POST /sync/tour`, idempotent). */
  seedTour(tour: SyncTourInput): Promise<SyncTourResponse>;
  /** Resolves once the service decided every one of these events (applied or refused); rejects after `timeoutMs` (5 s). */
  waitForSettled(eventIds: string[], options?: { timeoutMs?: number }): Promise<SettledEvent[]>;
  /** Stops the service and the network, and frees the database. */
  close(): Promise<void>;
}

/** Write-backs are retried within a test's patience, and a hanging ERP call times out in a second. */
const ERP_SETTINGS = { ERP_PUSH_POLL_MS: '50', ERP_PUSH_RETRY_BASE_MS: '50', ERP_PUSH_RETRY_MAX_MS: '500', ERP_TIMEOUT_MS: '1000' };

let image: Promise<Blob> | undefined;
let spare: Promise<Database> | undefined;

/** The migrated database, made at the first start in a process; every start loads a copy. */
function databaseImage() {
  image ??= migratedPgliteImage().catch((error) => {
    image = undefined;
    throw error;
  });
  return image;
}

/**
 * A database of its own, loaded from the image. Loading is most of a start, so the next one is
 * loaded in the background while the tests run (it keeps no process alive).
 */
async function takeDatabase(): Promise<Database> {
  const taken = spare ?? databaseImage().then((pgliteImage) => openDatabase({ pgliteImage }));
  spare = undefined;
  const database = await taken;
  spare = databaseImage().then((pgliteImage) => openDatabase({ pgliteImage }));
  spare.catch(() => (spare = undefined));
  return database;
}

/** The real service in this process on an in-memory PGlite of its own, on loopback, with faults on demand. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestTourline> {
  const adminKey = randomBytes(24).toString('base64url');
  const config = loadConfig({
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    AUTH_MODE: 'dev',
    ADMIN_API_KEY: adminKey,
    ERP_MODE: 'demo',
    ERP_IMPORT_ENABLED: 'false',
    ...ERP_SETTINGS,
    ...options.settings,
  });
  const logger = pino({ level: config.logLevel });
  const clock = new TestClock(options.now);
  const erp = new TestErp(logger, config.erp.timeoutMs);
  const database = await takeDatabase();
  let running: RunningServer;
  let network: FaultyNetwork;
  try {
    running = await startServer(config, { logger, ephemeral: true, database, erp, now: () => clock.now() });
  } catch (error) {
    await database.close();
    throw error;
  }
  try {
    network = await FaultyNetwork.start(running.url);
  } catch (error) {
    await running.close();
    await database.close();
    throw error;
  }
  const admin = new AdminApi({ baseUrl: running.url, adminKey }) as unknown as TypedAdmin;
  const db = running.ctx.database.db;

  const tourline: TestTourline = {
    url: network.url,
    serviceUrl: running.url,
    adminKey,
    admin,
    clock,
    network,
    erp,
    async tokenFor(personalnummer, { roles } = {}) {
      await db
        .insert(accounts)
        .values({ personalnummer, name: `Fahrer ${personalnummer}` })
        .onConflictDoNothing();
      const answer = await admin.transport.request<{ accessToken: string }>('POST', '/dev/token', {
        bearer: false,
        json: { personalnummer, roles },
      });
      return answer.accessToken;
    },
    seedTour: (tour) => admin.transport.request<SyncTourResponse>('POST', '/sync/tour', { bearer: false, json: tour }),
    waitForSettled: (eventIds, options) => waitForSettled(db, eventIds, options),
    async close() {
      erp.restore();
      await network.close();
      await running.close();
      await database.close();
    },
  };
  try {
    for (const tour of options.tours ?? []) await tourline.seedTour(tour);
  } catch (error) {
    await tourline.close();
    throw error;
  }
  return tourline;
}
