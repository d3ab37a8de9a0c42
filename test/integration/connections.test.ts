import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runImport } from '../../server/jobs/erpImport.js';
import { startServer } from '../../server/server.js';
import { createPostgresDatabase } from '../helpers/databases.js';
import { gatedErp } from '../helpers/gatedErp.js';
import { TestServer, testConfig } from '../helpers/server.js';
import { SyncSocket } from '../helpers/wsClient.js';

async function query<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

/** A driver with a live socket, a car created through the API, and that car arriving on the socket. */
async function carArrivesLive(api: TestServer, personalnummer: number) {
  const token = await api.token(personalnummer);
  const socket = await SyncSocket.open(api.url, { token });
  socket.send({ type: 'resume', cursor: (await api.get('/sync/cursor', { token })).body.cursor });
  await socket.next((m) => m.type === 'changes');
  const created = await api.post('/me/cars', { plate: `C-${randomUUID().slice(0, 8)}` }, { token });
  expect(created.status).toBe(200);
  await socket.next((m) => (m.changes ?? []).some((c) => c.entity === 'car' && c.id === created.body.car.id));
  await socket.close();
}

// PostgreSQL only: PGlite has no pool, no pooler and no second connection.
describe('PostgreSQL connections', () => {
  describe('behind a pooled DATABASE_URL, with DATABASE_DIRECT_URL', () => {
    const role = `pooled_${randomUUID().slice(0, 8)}`;
    let directUrl: string;
    let api: TestServer;
    const erp = gatedErp();

    beforeAll(async () => {
      directUrl = await createPostgresDatabase();
      // The pooled login may read and write the tables but create nothing: migrations through it would fail.
      await query(
        directUrl,
        `CREATE ROLE ${role} LOGIN PASSWORD 'pooled-secret';
        GRANT CONNECT ON DATABASE ${new URL(directUrl).pathname.slice(1)} TO ${role};
        GRANT USAGE ON SCHEMA public TO ${role};
        ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON TABLES TO ${role};
        ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON SEQUENCES TO ${role}`,
      );
      const pooledUrl = new URL(directUrl);
      pooledUrl.username = role;
      pooledUrl.password = 'pooled-secret';
      api = new TestServer(
        await startServer(await testConfig('postgres', { DATABASE_URL: pooledUrl.toString(), DATABASE_DIRECT_URL: directUrl }), {
          ephemeral: true,
          erp: erp.erp,
        }),
      );
    });
    afterAll(async () => {
      await api?.close();
      await query(directUrl, `DROP OWNED BY ${role}; DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
    });

    it('migrates and LISTENs on the direct connection, and serves requests from the pooled one', async () => {
      const directUser = decodeURIComponent(new URL(directUrl).username);
      const [migrations] = await query<{ owner: string }>(
        directUrl,
        `SELECT tableowner AS owner FROM pg_tables WHERE tablename = 'change_log'`,
      );
      expect(migrations.owner).toBe(directUser);
      await carArrivesLive(api, 7101);
      const sessions = await query<{ application_name: string; usename: string; query: string }>(
        directUrl,
        `SELECT application_name, usename, query
        FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'tourline%'`,
      );
      expect(sessions.filter((s) => s.query.startsWith('LISTEN')).map((s) => [s.application_name, s.usename])).toEqual([
        ['tourline listen', directUser],
      ]);
      const pooled = sessions.filter((s) => s.application_name === 'tourline');
      expect(pooled.length).toBeGreaterThan(0);
      expect(new Set(pooled.map((s) => s.usename))).toEqual(new Set([role]));
    });

    it('holds the ERP import lock of a date on the direct connection', async () => {
      const running = runImport(api.ctx, '2026-06-01', 'manual');
      await erp.reading;
      const holders = await query<{ application_name: string; usename: string }>(
        directUrl,
        `SELECT a.application_name, a.usename
        FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.objid = 20260601`,
      );
      expect(holders.map((h) => [h.application_name, h.usename])).toEqual([
        ['tourline import lock', decodeURIComponent(new URL(directUrl).username)],
      ]);
      erp.open();
      expect(await running).toMatchObject({ success: true, skipped: false });
    });
  });

  describe('with DATABASE_POOL_SIZE=1', () => {
    let api: TestServer;

    beforeAll(async () => {
      // The import at start takes its lock on a connection of its own and writes through the one pooled connection.
      const config = await testConfig('postgres', { DATABASE_POOL_SIZE: '1', ERP_IMPORT_ENABLED: 'true' });
      api = new TestServer(await startServer(config, { ephemeral: true }));
      await api.running.importJobs?.catchUp;
    });
    afterAll(async () => {
      await api?.close();
    });

    it('starts, imports, and answers concurrent requests and live changes through its one connection', async () => {
      expect((await api.get('/health')).status).toBe(200);
      const [{ runs }] = await query<{ runs: number }>(
        api.ctx.config.databaseUrl!,
        'SELECT count(*)::int AS runs FROM erp_import_runs WHERE success',
      );
      expect(runs).toBeGreaterThan(0);
      const token = await api.token(1001);
      const answers = await Promise.all([
        ...Array.from({ length: 6 }, () => api.get('/me/tours', { token })),
        ...Array.from({ length: 4 }, (_, i) => api.post('/me/cars', { plate: `P1-${i}-${randomUUID().slice(0, 6)}` }, { token })),
      ]);
      expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
      await carArrivesLive(api, 7102);
    });
  });
});
