/**
 * npx tsx test/bench/dbFaults.ts: one service instance on a throwaway PostgreSQL through the
 * database faults of docs/operations.md, printing for each what the clients were answered, how
 * long that took, how long the service needed to recover after the fault ended, and how many log
 * lines it wrote. The assertions live in test/integration/databaseFaults.test.ts; this prints the
 * figures of the operations document.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { pino } from 'pino';
import { WebSocket } from 'ws';
import { loadConfig } from '../../server/config.js';
import { startServer, type RunningServer } from '../../server/server.js';
import { newTour } from '../helpers/factories.js';
import { startEmbeddedPostgres } from '../helpers/embeddedPostgres.js';
import { controlPostgres } from '../helpers/postgresProcess.js';
import { openLines } from './seed.js';
import { monotonicMs, sleep } from './stats.js';

const OUTAGE_MS = Number(process.env.FAULT_OUTAGE_MS ?? 8000);
const ADMIN_KEY = 'fault-admin-key-0123456789abcdef';
const logLines = { count: 0 };
const logger = pino(
  { level: 'info' },
  new Writable({
    write(chunk, _enc, done) {
      logLines.count += String(chunk).split('\n').length - 1;
      done();
    },
  }),
);

interface Driver {
  personalnummer: number;
  token: string;
  deliveryId: string;
  lineId: string;
}
interface Answer {
  status: number | string;
  ms: number;
  retryAfter?: string | null;
}
const rows: { fault: string; answer: string; recovery: string; logLines: number }[] = [];

async function timed(work: () => Promise<{ status: number | string; retryAfter?: string | null }>): Promise<Answer> {
  const started = monotonicMs();
  const outcome = await work().catch((error: Error) => ({ status: `error ${error.message.slice(0, 40)}` }));
  return { ...outcome, ms: Math.round(monotonicMs() - started) };
}

const show = (a: Answer) => `${a.status} in ${a.ms} ms${a.retryAfter ? ` (Retry-After ${a.retryAfter})` : ''}`;

function push(base: string, driver: Driver, deliveryLine = driver.lineId) {
  return timed(async () => {
    const response = await fetch(`${base}/sync/push`, {
      method: 'POST',
      signal: AbortSignal.timeout(60_000),
      headers: { authorization: `Bearer ${driver.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        clientId: 'bench',
        events: [
          { eventId: randomUUID(), occurredAt: new Date().toISOString(), type: 'scan', deliveryItemId: deliveryLine, action: 'scan' },
        ],
      }),
    });
    await response.text();
    return { status: response.status, retryAfter: response.headers.get('retry-after') };
  });
}

const health = (base: string) =>
  timed(async () => {
    const response = await fetch(`${base}/health`, { signal: AbortSignal.timeout(60_000) });
    await response.text();
    return { status: response.status, retryAfter: response.headers.get('retry-after') };
  });

const upgrade = (base: string, driver: Driver) =>
  timed(
    () =>
      new Promise((resolve) => {
        const ws = new WebSocket(`${base.replace('http', 'ws')}/sync/ws`, { headers: { authorization: `Bearer ${driver.token}` } });
        const timer = setTimeout(() => {
          ws.terminate();
          resolve({ status: 'no answer in 60 s' });
        }, 60_000);
        ws.once('open', () => {
          clearTimeout(timer);
          ws.close();
          resolve({ status: 101 });
        });
        ws.once('unexpected-response', (_req, res) => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string });
          ws.terminate();
        });
        ws.once('error', () => undefined);
      }),
  );

/** Pushes every 100 ms until one is applied; the time from `since`. */
async function recovery(base: string, driver: Driver, since: number): Promise<string> {
  for (;;) {
    const answer = await push(base, driver);
    if (answer.status === 200) return `${Math.round(monotonicMs() - since)} ms`;
    if (monotonicMs() - since > 120_000) return 'not within 120 s';
    await sleep(100);
  }
}

async function scenario(fault: string, run: () => Promise<{ answer: string; recovery: string }>) {
  const before = logLines.count;
  const { answer, recovery: recovered } = await run();
  rows.push({ fault, answer, recovery: recovered, logLines: logLines.count - before });
  console.log(`${fault}: ${answer}; recovery ${recovered}; ${logLines.count - before} log lines`);
}

async function main() {
  const postgres = await startEmbeddedPostgres({ prefix: 'tourline-faults-pg-', settings: ['max_connections=40'] });
  const control = await controlPostgres(postgres.adminUrl);
  const admin = new pg.Client({ connectionString: postgres.adminUrl });
  await admin.connect();
  await admin.query('CREATE DATABASE faults');
  await admin.end();
  const url = postgres.adminUrl.replace(/\/postgres$/, '/faults');
  const env = { NODE_ENV: 'test', PORT: '0', HOST: '127.0.0.1', ADMIN_API_KEY: ADMIN_KEY, ERP_IMPORT_ENABLED: 'false', DATABASE_URL: url };
  let server: RunningServer | undefined;
  try {
    server = await startServer(loadConfig(env), { ephemeral: true, logger });
    const base = server.url;
    const db = server.ctx.database.db;
    const drivers: Driver[] = [];
    for (let i = 0; i < 12; i++) {
      const personalnummer = 9100 + i;
      const {
        deliveries: [{ delivery, items }],
      } = await newTour(db, { accountId: personalnummer, tourDate: '2026-06-01', positions: openLines(1) });
      const response = await fetch(`${base}/dev/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-admin-api-key': ADMIN_KEY },
        body: JSON.stringify({ personalnummer }),
      });
      drivers.push({
        personalnummer,
        token: ((await response.json()) as { accessToken: string }).accessToken,
        deliveryId: delivery.id,
        lineId: items[0].id,
      });
    }
    const [d0, d1] = drivers;
    await push(base, d0);

    await scenario(`PostgreSQL stopped for ${OUTAGE_MS / 1000} s`, async () => {
      await control.stop();
      const [p, h, w] = [await push(base, d0), await health(base), await upgrade(base, d1)];
      await sleep(OUTAGE_MS);
      await control.start();
      return { answer: `push ${show(p)}; /health ${show(h)}; WebSocket ${show(w)}`, recovery: await recovery(base, d0, monotonicMs()) };
    });

    await scenario(`PostgreSQL frozen (SIGSTOP) for ${OUTAGE_MS / 1000} s`, async () => {
      control.freeze();
      const thawAt = monotonicMs() + OUTAGE_MS;
      const thawing = sleep(OUTAGE_MS).then(() => control.thaw());
      const [p, h] = await Promise.all([push(base, d0), health(base)]);
      await thawing;
      return { answer: `push ${show(p)}; /health ${show(h)}`, recovery: await recovery(base, d0, thawAt) };
    });

    await scenario(`row lock on one delivery held ${OUTAGE_MS / 1000} s`, async () => {
      const others = drivers.slice(2);
      const baseline = await Promise.all(others.map((d) => push(base, d)));
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM deliveries WHERE id = $1 FOR UPDATE', [d0.deliveryId]);
      let released = 0;
      const release = sleep(OUTAGE_MS).then(async () => {
        released = monotonicMs();
        await holder.query('COMMIT');
        await holder.end();
      });
      const locked = [push(base, d0), push(base, d0)];
      await sleep(200);
      const during = await Promise.all(others.map((d) => push(base, d)));
      await release;
      const lockedAnswers = await Promise.all(locked);
      const slowest = (answers: Answer[]) => Math.max(...answers.map((a) => a.ms));
      return {
        answer:
          `10 other drivers: slowest ${slowest(during)} ms (${slowest(baseline)} ms without the lock), statuses ${[...new Set(during.map((a) => a.status))]}; ` +
          `2 pushes for the locked delivery: ${lockedAnswers.map(show).join(', ')}`,
        recovery: await recovery(base, d0, released),
      };
    });

    await scenario('LISTEN connection terminated while the connection slots are taken', async () => {
      const socket = new WebSocket(`${base.replace('http', 'ws')}/sync/ws`, { headers: { authorization: `Bearer ${d1.token}` } });
      const seen: string[] = [];
      socket.on('message', (data) => {
        seen.push(String(data));
      });
      await new Promise((resolve) => socket.once('open', resolve));
      socket.send(JSON.stringify({ type: 'resume' }));
      await sleep(300);
      // The pool holds its connections (as under load); the LISTEN session must come back beside them.
      await Promise.all(Array.from({ length: 10 }, () => db.execute(sql`SELECT pg_sleep(0.1)`)));
      const killer = new pg.Client({ connectionString: postgres.adminUrl });
      await killer.connect();
      const fillers = [killer, ...(await takeFreeSlots(postgres.adminUrl))];
      const {
        rows: [{ n }],
      } = await killer.query(`SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE query LIKE 'LISTEN%'`);
      // The slot the LISTEN session freed goes to others at once, as it would under load.
      fillers.push(...(await takeFreeSlots(postgres.adminUrl)));
      const heard: number[] = [];
      const statuses: (number | string)[] = [];
      for (let i = 0; i < 6; i++) {
        const before = seen.length;
        const pushed = monotonicMs();
        statuses.push((await push(base, d1)).status);
        while (seen.length === before && monotonicMs() - pushed < 5000) await sleep(20);
        heard.push(seen.length > before ? Math.round(monotonicMs() - pushed) : -1);
        await sleep(300);
      }
      await Promise.all(fillers.map((c) => c.end().catch(() => undefined)));
      const released = monotonicMs();
      const before = seen.length;
      await push(base, d1);
      while (seen.length === before && monotonicMs() - released < 60_000) await sleep(20);
      socket.close();
      const got = heard.filter((ms) => ms >= 0);
      return {
        answer: `${n} LISTEN session ended; pushes ${[...new Set(statuses)]}; live client got ${got.length} of 6 changes within 5 s (${got.length ? `slowest ${Math.max(...got)} ms` : 'none'})`,
        recovery: seen.length > before ? `change after slots freed: ${Math.round(monotonicMs() - released)} ms` : 'none within 60 s',
      };
    });

    await scenario('connection slots exhausted (pool idle connections kept)', async () => {
      const fillers = await takeFreeSlots(postgres.adminUrl);
      const answers = await Promise.all(drivers.slice(2).flatMap((d) => [push(base, d), push(base, d)]));
      const released = monotonicMs();
      await Promise.all(fillers.map((c) => c.end().catch(() => undefined)));
      const statuses = new Map<string, number>();
      for (const a of answers) statuses.set(String(a.status), (statuses.get(String(a.status)) ?? 0) + 1);
      return {
        answer: `20 concurrent pushes: ${[...statuses].map(([s, n]) => `${n}x ${s}`).join(', ')}, slowest ${Math.max(...answers.map((a) => a.ms))} ms`,
        recovery: await recovery(base, d0, released),
      };
    });

    await server.close();
    server = undefined;
    await scenario(`start while PostgreSQL is down for ${OUTAGE_MS / 1000} s`, async () => {
      await control.stop();
      const startedAt = monotonicMs();
      let dbUpAt = 0;
      const bringUp = sleep(OUTAGE_MS).then(async () => {
        await control.start();
        dbUpAt = monotonicMs();
      });
      const outcome = await startServer(loadConfig(env), { ephemeral: true, logger }).then(
        (s) => ({ server: s, ms: Math.round(monotonicMs() - startedAt) }),
        (error: Error) => ({ error: error.message.split('\n')[0], ms: Math.round(monotonicMs() - startedAt) }),
      );
      await bringUp;
      if ('server' in outcome) {
        server = outcome.server;
        return {
          answer: `start waited for the database`,
          recovery: `listening ${Math.round(outcome.ms - (dbUpAt - startedAt))} ms after PostgreSQL came up`,
        };
      }
      return { answer: `start failed after ${outcome.ms} ms: ${outcome.error}`, recovery: 'none (process exits)' };
    });
  } finally {
    await server?.close().catch(() => undefined);
    await control.dispose();
  }
  console.log('\n| fault | answer during the fault | recovery after it ended | log lines |\n|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.fault} | ${r.answer} | ${r.recovery} | ${r.logLines} |`);
}

/** Opens connections until PostgreSQL refuses more (the superuser's reserved ones stay free). */
async function takeFreeSlots(adminUrl: string): Promise<pg.Client[]> {
  const clients: pg.Client[] = [];
  const appUrl = adminUrl.replace(/\/postgres$/, '/faults');
  for (;;) {
    const client = new pg.Client({ connectionString: appUrl });
    try {
      await client.connect();
      clients.push(client);
    } catch {
      return clients;
    }
  }
}

await main();
process.exit(0);
