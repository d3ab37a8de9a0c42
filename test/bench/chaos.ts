/**
 * npm run chaos: simulated drivers with the SDK's file outbox push scans through two service
 * instances on one PostgreSQL while instances are killed with SIGKILL and restarted, PostgreSQL
 * itself is restarted, database connections and WebSockets are cut, requests are dropped,
 * answers lost and pushes sent twice.
 * Then the database is held against what the drivers did: every scan applied exactly once,
 * every change in every account's live feed, every device's copy equal to the database, one
 * ERP import run for the day although every instance start tries one. Exits 1 on any difference.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { WebSocket } from 'ws';
import { TourlineClient } from '../../client-sdk/index.js';
import { FileStore } from '../../client-sdk/node.js';
import { openDatabase } from '../../server/db/client.js';
import { newTour } from '../helpers/factories.js';
import { request, requestJson } from './http.js';
import { freePort } from '../helpers/embeddedPostgres.js';
import { controlPostgres } from '../helpers/postgresProcess.js';
import { startPostgres } from './postgres.js';
import { openLines } from './seed.js';
import { monotonicMs, sleep } from './stats.js';
import { BENCH_ADMIN_KEY } from './target.js';
import { Auditor } from './chaosAuditor.js';
import { Instance } from './chaosInstance.js';
import { faultyFetch, socketFactory } from './chaosNetwork.js';
import { chaosVerdict, type ChaosCounts, type ChaosDriver } from './chaosVerdict.js';

const DRIVERS = Number(process.env.CHAOS_DRIVERS ?? 32);
const LOAD_MS = Number(process.env.CHAOS_LOAD_MS ?? 75_000);
const SETTLE_MS = 60_000;
const TOUR_DATE = '2026-06-01';
const BASE_URL = 'http://tourline.chaos';
// [at ms, instance, action]
const KILLS: [number, number, 'kill' | 'start'][] = [
  [15_000, 0, 'kill'],
  [23_000, 0, 'start'],
  [45_000, 1, 'kill'],
  [52_000, 1, 'start'],
];
// [at ms, how long PostgreSQL stays down]: a restart of the database itself (an embedded one only).
const DATABASE_RESTART: [number, number] = [34_000, 3000];

const counts: ChaosCounts = {
  viewSamples: 0,
  viewOver: 0,
  dropped: 0,
  lost: 0,
  duplicated: 0,
  socketCuts: 0,
  backendsTerminated: 0,
  kills: 0,
  appRestarts: 0,
  databaseRestarts: 0,
};
// Off while the drivers load their tours (a first read is not queued), on during the load.
let faultsOn = false;
const chance = (p: number) => faultsOn && Math.random() < p;

interface Driver extends ChaosDriver {
  dir: string;
  sockets: Set<WebSocket>;
  restart: boolean;
}

const cluster = await startPostgres();
const databaseUrl = await cluster.createDatabase('chaos');
const postgres = process.env.DATABASE_URL ? undefined : await controlPostgres(cluster.adminUrl);
const work = mkdtempSync(path.join(os.tmpdir(), 'tourline-chaos-'));
const ports = [await freePort(), await freePort()];
const env = {
  NODE_ENV: 'development',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  ADMIN_API_KEY: BENCH_ADMIN_KEY,
  DATABASE_URL: databaseUrl,
  DATA_DIR: path.join(work, 'server'),
  PUBLIC_URL: `http://127.0.0.1:${ports[0]}`,
  ERP_IMPORT_ENABLED: 'true',
  DATABASE_POOL_SIZE: '8',
};
const instances = ports.map(
  (port, i) =>
    new Instance(`instance ${'AB'[i]}`, port, env, (message, output) => {
      failures.push(`${message}:\n${output}`);
      log(message);
    }),
);
const report: [string, number | string][] = [];
const failures: string[] = [];
let auditors: Auditor[] = [];
const drivers: Driver[] = [];
const t0 = monotonicMs();
const log = (message: string) => console.log(`${((monotonicMs() - t0) / 1000).toFixed(1).padStart(6)} s  ${message}`);

/** The instance a driver talks to: its home one, the other while home is down. */
const instanceFor = (home: number) =>
  instances[home].alive ? instances[home] : instances[1 - home].alive ? instances[1 - home] : instances[home];

async function token(personalnummer: number): Promise<string> {
  for (;;) {
    const instance = instances.find((i) => i.alive);
    if (instance) {
      const reply = await request('POST', `${instance.url}/dev/token`, { admin: BENCH_ADMIN_KEY, body: { personalnummer } }).catch(
        () => undefined,
      );
      if (reply?.status === 200) return JSON.parse(reply.text).accessToken;
    }
    await sleep(100);
  }
}

async function openClient(driver: Omit<Driver, 'client'>) {
  const client = await TourlineClient.open({
    baseUrl: BASE_URL,
    getToken: () => token(driver.personalnummer),
    storage: await FileStore.open(driver.dir),
    fetch: faultyFetch(instanceFor, driver.index % 2, { chance, counts }),
    webSocket: socketFactory(instanceFor, driver.index % 2, driver.sockets),
    backoff: { baseMs: 50, capMs: 1000 },
    pollIntervalMs: 2000,
    requestTimeoutMs: 10_000,
  });
  // Every view the app is told of: no line may show more than the scans the driver made on it
  // (an entry applied on top of a copy that already holds it would).
  client.on('change', () => {
    counts.viewSamples += 1;
    const positions = client.view(driver.tourId)?.deliveries.flatMap((d) => d.positions) ?? [];
    if (positions.some((p) => p.scannedQuantity > (driver.scans.get(p.id) ?? 0))) counts.viewOver += 1;
  });
  return client;
}

async function driverLoop(driver: Driver, until: number) {
  while (monotonicMs() < until) {
    if (driver.restart) {
      // The app is closed and opened again: the outbox comes back from its files.
      driver.restart = false;
      await driver.client.close();
      driver.client = await openClient(driver);
      driver.client.start();
      counts.appRestarts += 1;
    }
    const item = driver.items[Math.floor(Math.random() * driver.items.length)];
    // Counted first: the view shows the scan as soon as it is queued.
    driver.scans.set(item, (driver.scans.get(item) ?? 0) + 1);
    const { eventId } = await driver.client.scan(item);
    driver.eventIds.push(eventId);
    // A busy driver at the loading ramp: a scan every quarter to half second.
    await sleep(250 + Math.random() * 350);
  }
}

async function faults(until: number) {
  let admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  const started = monotonicMs();
  const pending = [...KILLS];
  let databaseRestart = postgres ? DATABASE_RESTART : undefined;
  let nextCut = started + 4000;
  let nextRestart = started + 30_000;
  let nextProgress = started + 10_000;
  try {
    while (monotonicMs() < until) {
      const at = monotonicMs() - started;
      while (pending.length && pending[0][0] <= at) {
        const [, index, action] = pending.shift()!;
        if (action === 'kill') {
          log(`SIGKILL ${instances[index].name}`);
          instances[index].kill();
          counts.kills += 1;
        } else {
          log(`restarting ${instances[index].name}`);
          await instances[index].start();
          log(`${instances[index].name} is back`);
        }
      }
      if (databaseRestart && databaseRestart[0] <= at && postgres) {
        log(`stopping PostgreSQL for ${databaseRestart[1] / 1000} s`);
        await admin.end().catch(() => undefined);
        await postgres.stop();
        await sleep(databaseRestart[1]);
        await postgres.start();
        counts.databaseRestarts += 1;
        databaseRestart = undefined;
        log('PostgreSQL is back');
        admin = new pg.Client({ connectionString: databaseUrl });
        await admin.connect();
      }
      if (monotonicMs() >= nextCut) {
        nextCut += 4000;
        for (const driver of drivers) {
          if (Math.random() < 1 / 3) {
            for (const socket of driver.sockets) socket.terminate();
            counts.socketCuts += 1;
          }
        }
        for (const auditor of auditors) if (Math.random() < 1 / 4) auditor.cut();
        // Cut a few of the instances' database connections (pool or LISTEN) mid-flight.
        const { rows } = await admin.query<{ pid: number }>(
          'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() ORDER BY random() LIMIT 3',
        );
        for (const { pid } of rows) await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        counts.backendsTerminated += rows.length;
      }
      if (monotonicMs() >= nextProgress) {
        nextProgress += 10_000;
        const pendingCount = drivers.reduce((n, d) => n + d.client.status().pendingCount, 0);
        log(`${drivers.reduce((n, d) => n + d.eventIds.length, 0)} scans made, ${pendingCount} waiting in outboxes`);
        if (process.env.CHAOS_DEBUG) {
          for (const instance of instances) {
            const t = monotonicMs();
            const reply = await request('GET', `${instance.url}/health`).catch((e) => ({ status: String(e.code ?? e) }));
            log(`${instance.name} alive=${instance.alive} health=${reply.status} in ${Math.round(monotonicMs() - t)} ms`);
          }
          for (const d of drivers.slice(0, 4)) log(JSON.stringify(d.client.status()).slice(0, 400));
        }
      }
      if (monotonicMs() >= nextRestart) {
        nextRestart += 30_000;
        for (const driver of drivers) if (Math.random() < 0.5) driver.restart = true;
      }
      await sleep(100);
    }
  } finally {
    await admin.end();
  }
}

try {
  log(`PostgreSQL (${cluster.settings}); starting ${instances.map((i) => i.name).join(' and ')}`);
  await instances[0].start();
  await instances[1].start();

  const database = await openDatabase({ url: databaseUrl, poolSize: 2 });
  try {
    for (let index = 0; index < DRIVERS; index++) {
      const personalnummer = 40_001 + index;
      const tour = await database.db.transaction((tx) =>
        newTour(tx, { accountId: personalnummer, deliveries: 4, positions: openLines(3), tourDate: TOUR_DATE }),
      );
      const partial = {
        index,
        personalnummer,
        tourId: tour.tour.id,
        items: tour.deliveries.flatMap((d) => d.items.map((i) => i.id)),
        dir: path.join(work, `driver-${index}`),
        scans: new Map<string, number>(),
        eventIds: [],
        sockets: new Set<WebSocket>(),
        restart: false,
      };
      drivers.push({ ...partial, client: await openClient(partial) });
    }
    const startSeq = Number(
      (await database.db.execute<{ s: string }>(sql`SELECT coalesce(max(seq), 0)::text AS s FROM change_log`)).rows[0].s,
    );
    const tokens = await Promise.all(drivers.map((d) => token(d.personalnummer)));
    const { cursor } = await requestJson<{ cursor: string }>('GET', `${instances[0].url}/sync/cursor`, { token: tokens[0] });
    auditors = drivers.map((d, i) => new Auditor(d, cursor, tokens[i], instanceFor));
    for (const auditor of auditors) auditor.connect();
    for (const driver of drivers) {
      await driver.client.loadTours({ date: TOUR_DATE });
      driver.client.start();
    }

    log(`${DRIVERS} drivers scanning for ${LOAD_MS / 1000} s`);
    faultsOn = true;
    const until = monotonicMs() + LOAD_MS;
    await Promise.all([...drivers.map((d) => driverLoop(d, until)), faults(until)]);
    faultsOn = false;
    for (const instance of instances) if (!instance.alive) await instance.start();
    log('load over; waiting for every outbox to drain');

    const settleUntil = monotonicMs() + SETTLE_MS;
    for (const driver of drivers) {
      await driver.client
        .settled(Math.max(1000, settleUntil - monotonicMs()))
        .catch((error) => failures.push(`driver ${driver.personalnummer}: ${error.message.slice(0, 300)}`));
      await driver.client.sync().catch((error) => failures.push(`driver ${driver.personalnummer}: final sync: ${error.message}`));
    }
    const head = Number((await database.db.execute<{ s: string }>(sql`SELECT coalesce(max(seq), 0)::text AS s FROM change_log`)).rows[0].s);
    for (let waited = 0; waited < 15_000 && auditors.some((a) => a.maxSeq < head); waited += 100) await sleep(100);
    log('comparing');

    const verdict = await chaosVerdict(database.db, { drivers, auditors, counts, startSeq, head });
    report.push(...verdict.report);
    failures.push(...verdict.failures);
  } finally {
    for (const auditor of auditors) auditor.stop();
    for (const driver of drivers) await driver.client.close().catch(() => undefined);
    await database.close();
  }
} catch (error) {
  failures.push(error instanceof Error ? (error.stack ?? error.message) : String(error));
} finally {
  await Promise.all(instances.map((i) => i.stop()));
  // After a restart the starter no longer knows the server's process.
  await (counts.databaseRestarts ? postgres!.dispose() : cluster.stop());
  rmSync(work, { recursive: true, force: true });
}

const width = Math.max(...report.map(([label]) => label.length));
console.log('');
for (const [label, value] of report) console.log(`${label.padEnd(width)}  ${value}`);
console.log(
  `\n${failures.length ? `FAILED:\n  ${failures.join('\n  ')}` : 'OK: every scan exactly once, no change missing from any feed'} (${Math.round((monotonicMs() - t0) / 1000)} s)`,
);
process.exit(failures.length ? 1 : 0);
