import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { startChangeRetention } from '../../server/jobs/changeRetention.js';
import { hasSuccessfulImport, importTargetDate } from '../../server/jobs/erpImport.js';
import { startImportJobs } from '../../server/jobs/scheduler.js';
import { startServer } from '../../server/server.js';
import { startEmbeddedPostgres } from '../helpers/embeddedPostgres.js';
import { newTour } from '../helpers/factories.js';
import { controlPostgres, type PostgresControl } from '../helpers/postgresProcess.js';
import { TEST_ADMIN_KEY, TestServer } from '../helpers/server.js';
import { SyncSocket } from '../helpers/wsClient.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const MIGRATION_LOCK = 7_230_001;
// Short timeouts, so that every fault is answered and over within seconds.
const TIMEOUTS = {
  DATABASE_CONNECT_TIMEOUT_MS: '2000',
  DATABASE_POOL_WAIT_MS: '3000',
  DATABASE_STATEMENT_TIMEOUT_MS: '1500',
  DATABASE_LOCK_TIMEOUT_MS: '1000',
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '5000',
};
/** The longest a fault may take to be answered, and the service to recover once it is over. */
const ANSWER_MS = 4000;
const RECOVER_MS = 5000;

interface Driver {
  personalnummer: number;
  token: string;
  deliveryId: string;
  lineId: string;
}
type Event = ReturnType<typeof scan>;
const scan = (deliveryItemId: string) => ({
  eventId: randomUUID(),
  occurredAt: new Date().toISOString(),
  type: 'scan' as const,
  deliveryItemId,
  action: 'scan' as const,
});

/** PostgreSQL only: the suite stops, freezes and starves a server of its own. */
describe('database faults', () => {
  let control: PostgresControl;
  let adminUrl: string;
  let url: string;
  const lines: string[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _enc, done) {
        lines.push(...String(chunk).trim().split('\n'));
        done();
      },
    }),
  );
  const servers: TestServer[] = [];
  let nextAccount = 9600;
  /** Every event sent, by line, for the exactly-once check. */
  const sent = new Map<string, Set<string>>();

  beforeAll(async () => {
    const postgres = await startEmbeddedPostgres({ prefix: 'tourline-faults-', settings: ['max_connections=40', 'fsync=off'] });
    adminUrl = postgres.adminUrl;
    control = await controlPostgres(adminUrl);
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    // The service logs in as a role of its own, whose connections can be limited.
    await admin.query("CREATE ROLE app LOGIN PASSWORD 'app'");
    await admin.query('CREATE DATABASE faults OWNER app');
    await admin.end();
    url = adminUrl.replace(/\/\/postgres:postgres@/, '//app:app@').replace(/\/postgres$/, '/faults');
  });
  afterAll(async () => {
    for (const server of servers) await server.close().catch(() => undefined);
    await control?.dispose();
  });

  const config = (env: Record<string, string> = {}) =>
    loadConfig({
      NODE_ENV: 'test',
      PORT: '0',
      HOST: '127.0.0.1',
      ADMIN_API_KEY: TEST_ADMIN_KEY,
      ERP_IMPORT_ENABLED: 'false',
      DATABASE_URL: url,
      ...TIMEOUTS,
      ...env,
    });
  async function instance() {
    const server = new TestServer(await startServer(config(), { ephemeral: true, logger }));
    servers.push(server);
    return server;
  }
  async function driver(server: TestServer): Promise<Driver> {
    const personalnummer = nextAccount++;
    const {
      deliveries: [{ delivery, items }],
    } = await newTour(server.db, {
      accountId: personalnummer,
      positions: [{ quantity: 1000, scannedQuantity: 0, state: 'InProgress' }],
    });
    return { personalnummer, token: await server.token(personalnummer), deliveryId: delivery.id, lineId: items[0].id };
  }
  const push = (server: TestServer, d: Driver, events: Event[]) => {
    for (const e of events) {
      if (!sent.has(e.deliveryItemId)) sent.set(e.deliveryItemId, new Set());
      sent.get(e.deliveryItemId)!.add(e.eventId);
    }
    return server.post('/sync/push', { clientId: 'phone', events }, { token: d.token });
  };
  /** Sends the same events until they are taken, as the SDK does; only 503s may come before. Returns the time taken. */
  async function pushUntilTaken(server: TestServer, d: Driver, events: Event[]) {
    const started = Date.now();
    for (;;) {
      const response = await push(server, d, events).catch(() => ({ status: 0, headers: new Headers(), body: undefined }));
      if (response.status === 200) return Date.now() - started;
      expect(response.status).toBe(503);
      expect(Date.now() - started).toBeLessThan(30_000);
      await sleep(100);
    }
  }
  function expectUnavailable(response: { status: number; headers: Headers; body: unknown }) {
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(response.headers.get('content-type')).toContain('application/problem+json');
    expect(response.body).toMatchObject({ status: 503, code: 'upstream_unavailable' });
  }
  /** Every event sent was applied exactly once: each line counts as many scans as distinct events went out for it. */
  async function expectExactlyOnce(server: TestServer) {
    const arrayOf = (ids: Iterable<string>) => `{${[...ids].join(',')}}`;
    const eventIds = [...sent.values()].flatMap((ids) => [...ids]);
    const items = await server.db.execute<{ id: string; scanned: number }>(sql`
      SELECT id, scanned_quantity AS scanned FROM delivery_items WHERE id = ANY(${arrayOf(sent.keys())}::uuid[])`);
    expect(items.rows).toHaveLength(sent.size);
    for (const row of items.rows) expect(row.scanned).toBe(sent.get(row.id)!.size);
    const processed = await server.db.execute<{ n: string }>(sql`
      SELECT count(*)::text AS n FROM processed_events WHERE event_id = ANY(${arrayOf(eventIds)}::uuid[]) AND rejection IS NULL`);
    expect(Number(processed.rows[0].n)).toBe(eventIds.length);
  }
  /** Opens connections until PostgreSQL refuses more; the service's pool keeps what it holds. */
  async function takeFreeSlots(): Promise<pg.Client[]> {
    const clients: pg.Client[] = [];
    for (;;) {
      const client = new pg.Client({ connectionString: adminUrl });
      client.on('error', () => undefined);
      try {
        await client.connect();
        clients.push(client);
      } catch {
        return clients;
      }
    }
  }
  /** Waits until /health says plainly ok: the database answers and LISTEN is back. */
  async function healthOk(server: TestServer, withinMs: number) {
    const started = Date.now();
    while ((await server.get('/health')).text !== 'ok' && Date.now() - started < withinMs) await sleep(100);
    expect((await server.get('/health')).text).toBe('ok');
  }
  /** Makes the pool open `count` connections and keep them, as it does under load. */
  const warmPool = (server: TestServer, count = 10) =>
    Promise.all(Array.from({ length: count }, () => server.db.execute(sql`SELECT pg_sleep(0.05)`)));

  describe('one instance', () => {
    let a: TestServer;
    let drivers: Driver[];
    beforeAll(async () => {
      a = await instance();
      drivers = [];
      for (let i = 0; i < 12; i++) drivers.push(await driver(a));
    });
    // Its idle connections would otherwise close during later tests and free connection slots.
    afterAll(() => a.close());

    it('answers 503 with Retry-After while PostgreSQL is stopped, keeps client mistakes 4xx, and takes every event once when it is back', async () => {
      const [d] = drivers;
      const events = [scan(d.lineId), scan(d.lineId)];
      await control.stop();
      try {
        const started = Date.now();
        expectUnavailable(await push(a, d, events));
        expectUnavailable(await a.get('/sync/cursor', { token: d.token }));
        expectUnavailable(await a.get('/admin/reviews', { admin: true }));
        expectUnavailable(await a.get('/health'));
        await expect(SyncSocket.open(a.url, { token: d.token })).rejects.toMatchObject({ status: 503 });
        expect(Date.now() - started).toBeLessThan(ANSWER_MS);
        // No database needed to see these are wrong.
        expect((await a.post('/admin/reviews/not-a-uuid/resolve', { processor: 'Frau Weber' }, { admin: true })).status).toBe(400);
        expect((await a.get('/admin/reviews', { admin: 'wrong-key-0123456789' })).status).toBe(401);
      } finally {
        await control.start();
      }
      expect(await pushUntilTaken(a, d, events)).toBeLessThan(RECOVER_MS);
      expect((await push(a, d, events)).body.results.map((r: { status: string }) => r.status)).toEqual(['duplicate', 'duplicate']);
      await healthOk(a, RECOVER_MS);
      await expectExactlyOnce(a);
      expect(lines.filter((l) => l.includes('database unavailable: answering 503')).length).toBeGreaterThanOrEqual(1);
      expect(lines.some((l) => l.includes('"level":50') && l.includes('stack'))).toBe(false);
    });

    it('answers 503 within seconds while PostgreSQL is frozen (SIGSTOP), and recovers after SIGCONT', async () => {
      const [, d] = drivers;
      const events = [scan(d.lineId)];
      await warmPool(a);
      control.freeze();
      let thawed: number;
      try {
        const started = Date.now();
        const [pushed, health] = await Promise.all([push(a, d, events), a.get('/health')]);
        expectUnavailable(pushed);
        expectUnavailable(health);
        expect(Date.now() - started).toBeLessThan(ANSWER_MS);
      } finally {
        control.thaw();
        thawed = Date.now();
      }
      await pushUntilTaken(a, d, events);
      expect(Date.now() - thawed).toBeLessThan(RECOVER_MS);
      await expectExactlyOnce(a);
    });

    it('lets ten other drivers push while one delivery is locked elsewhere, and answers the locked pushes 503', async () => {
      const [locked, , ...others] = drivers;
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM deliveries WHERE id = $1 FOR UPDATE', [locked.deliveryId]);
      const lockedEvents = [[scan(locked.lineId)], [scan(locked.lineId)]];
      const othersEvents = others.slice(0, 10).map((d) => [scan(d.lineId)]);
      try {
        let lockedAnswered = 0;
        const lockedPushes = lockedEvents.map((events) => push(a, locked, events).finally(() => (lockedAnswered += 1)));
        await sleep(50);
        const otherAnswers = await Promise.all(others.slice(0, 10).map((d, i) => push(a, d, othersEvents[i])));
        // All answered while the lock is still held, before the locked pushes gave up on it: nobody waited for it.
        expect(otherAnswers.map((r) => r.status)).toEqual(Array(10).fill(200));
        expect(lockedAnswered).toBe(0);
        for (const answer of await Promise.all(lockedPushes)) expectUnavailable(answer);
      } finally {
        await holder.query('COMMIT');
        await holder.end();
      }
      for (const events of lockedEvents) expect(await pushUntilTaken(a, locked, events)).toBeLessThan(RECOVER_MS);
      await expectExactlyOnce(a);
    });

    it("serves pushes from the pool's own connections when PostgreSQL has no connection slot left", async () => {
      // A few: the pool tries to open more, is refused, and waits for its own instead of failing.
      await warmPool(a, 3);
      const fillers = await takeFreeSlots();
      try {
        const answers = await Promise.all(drivers.slice(2).flatMap((d) => [push(a, d, [scan(d.lineId)]), push(a, d, [scan(d.lineId)])]));
        expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
      } finally {
        await Promise.all(fillers.map((c) => c.end().catch(() => undefined)));
      }
      await expectExactlyOnce(a);
    });
  });

  it('keeps live changes flowing while the LISTEN connection is cut and cannot come back, and reports it', async () => {
    const a = await instance();
    const b = await instance();
    const d = await driver(a);
    const tokenB = await b.token(d.personalnummer);
    const socket = await SyncSocket.open(b.url, { token: tokenB });
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    try {
      socket.send({ type: 'resume' });
      await socket.next((m) => m.type === 'changes');
      await Promise.all([warmPool(a, 4), warmPool(b, 4)]);
      // The service's role may keep the connections it has but open no more: LISTEN cannot come back.
      const {
        rows: [{ held, listening }],
      } = await admin.query(`SELECT count(*)::int AS held, count(*) FILTER (WHERE application_name = 'tourline listen')::int AS listening
        FROM pg_stat_activity WHERE usename = 'app'`);
      await admin.query(`ALTER ROLE app CONNECTION LIMIT ${held - listening}`);
      const { rows } = await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'app' AND application_name = 'tourline listen'`,
      );
      expect(rows.length).toBeGreaterThanOrEqual(2);
      for (let i = 0; i < 3; i++) {
        const from = socket.messages.length;
        const events = [scan(d.lineId)];
        expect((await push(a, d, events)).status).toBe(200);
        const started = Date.now();
        await socket.next((m) => m.type === 'changes' && (m.changes ?? []).some((c) => c.id === d.lineId), from, RECOVER_MS);
        expect(Date.now() - started).toBeLessThan(RECOVER_MS);
      }
      expect((await b.get('/health')).text).toContain('change listener down');
      expect(lines.some((l) => l.includes('change listener (LISTEN) lost'))).toBe(true);
    } finally {
      await admin.query('ALTER ROLE app CONNECTION LIMIT -1');
      await admin.end();
    }
    await healthOk(b, 10_000);
    expect(lines.some((l) => l.includes('change listener (LISTEN) back'))).toBe(true);
    await socket.close();
    await expectExactlyOnce(a);
  });

  describe('start', () => {
    it('waits for a database that is down, saying so once per try, and serves once it is up', async () => {
      await control.stop();
      const from = lines.length;
      const starting = startServer(config(), { ephemeral: true, logger });
      await sleep(1500);
      await control.start();
      const server = new TestServer(await starting);
      servers.push(server);
      expect((await server.get('/health')).status).toBe(200);
      const tries = lines.slice(from).filter((l) => l.includes('database unreachable (try'));
      expect(tries.length).toBeGreaterThanOrEqual(1);
      expect(tries[0]).toContain('ECONNREFUSED');
    });

    it('gives up after DATABASE_START_TIMEOUT_MS with one line that says why', async () => {
      await control.stop();
      try {
        await expect(startServer(config({ DATABASE_START_TIMEOUT_MS: '1000' }), { ephemeral: true, logger })).rejects.toThrow(
          /database unreachable for \d+ s \(DATABASE_START_TIMEOUT_MS\), giving up/,
        );
      } finally {
        await control.start();
      }
    });

    it('says who holds the migration lock while it waits for it', async () => {
      const holder = new pg.Client({ connectionString: url, application_name: 'migration holder' });
      await holder.connect();
      await holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
      const from = lines.length;
      const starting = startServer(config(), { ephemeral: true, logger });
      try {
        const started = Date.now();
        while (!lines.slice(from).some((l) => l.includes('waiting for the migration lock')) && Date.now() - started < 5000) await sleep(50);
        const {
          rows: [{ pid }],
        } = await holder.query('SELECT pg_backend_pid() AS pid');
        expect(lines.slice(from).find((l) => l.includes('waiting for the migration lock'))).toContain(
          `held by pid ${pid} (migration holder`,
        );
      } finally {
        await holder.end();
      }
      servers.push(new TestServer(await starting));
    });
  });
  // Last: pruning the whole change log would expire the cursors of the tests above.
  describe('jobs', () => {
    /** Waits for a log line from `from` on that contains `text`. */
    async function logged(from: number, text: string, withinMs = 10_000) {
      const started = Date.now();
      while (!lines.slice(from).some((l) => l.includes(text))) {
        if (Date.now() - started > withinMs)
          throw new Error(`no log line "${text}" within ${withinMs} ms:\n${lines.slice(from).join('\n')}`);
        await sleep(50);
      }
    }

    it('retries a retention run that failed on the database soon, not the next day', async () => {
      const server = await instance();
      // Pruning walks from the oldest entry: the whole log is made old, so that it all goes.
      await server.db.execute(sql`INSERT INTO change_log (entity, op, entity_id)
        SELECT 'delivery', 'upsert', gen_random_uuid()::text FROM generate_series(1, 5)`);
      await server.db.execute(sql`UPDATE change_log SET created_at = now() - interval '30 days'`);
      await control.stop();
      const from = lines.length;
      const retention = startChangeRetention({
        db: server.db,
        retentionDays: 7,
        eventRetentionDays: 3650,
        deviceRetentionDays: 3650,
        logger,
        retryMs: 500,
        firstRunMs: 0,
      });
      try {
        await logged(from, 'retention pruning failed: database unavailable');
        await control.start();
        await logged(from, 'change log pruned', RECOVER_MS + 5000);
        const {
          rows: [{ old }],
        } = await server.db.execute<{ old: number }>(sql`
          SELECT count(*)::int AS old FROM change_log WHERE created_at < now() - interval '7 days'`);
        expect(old).toBe(0);
      } finally {
        await control.start();
        await retention.stop();
      }
    });

    it('retries an ERP import that failed on the database soon, and imports the day once it is back', async () => {
      const server = await instance();
      const date = '2031-03-04';
      const now = () => new Date(`${date}T05:00:00Z`);
      await control.stop();
      const from = lines.length;
      const jobs = startImportJobs({ ...server.ctx, logger }, { now, retryMs: 500 });
      try {
        await logged(from, 'failed: database unavailable');
        await control.start();
        await jobs.catchUp;
        expect(await hasSuccessfulImport(server.db, importTargetDate(server.ctx, now()))).toBe(true);
      } finally {
        await control.start();
        await jobs.stop();
      }
    });
  });
});
