import { sql } from 'drizzle-orm';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { startTestServer, useTestServer } from '../helpers/server.js';
import { inProcess } from '../helpers/target.js';

describe.each(databaseKinds)('liveness and readiness probes on %s', (kind) => {
  const api = useTestServer(kind, { READINESS_TIMEOUT_MS: '300' });

  it('answers /livez and /readyz 200 without credentials while all is well', async () => {
    const live = await api.get('/livez');
    expect(live.status).toBe(200);
    expect(live.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(live.text).toBe('ok');
    const ready = await api.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready' });
  });

  it('keeps /health as it was: 200 text/plain ok', async () => {
    const health = await api.get('/health');
    expect(health.status).toBe(200);
    expect(health.text).toBe('ok');
  });

  it.each([
    ['POST', '/readyz'],
    ['PUT', '/livez'],
    ['DELETE', '/readyz'],
    ['GET', '/readyz/extra'],
    ['GET', '/livez/x'],
  ])('answers %s %s with a 404 problem', async (method, path) => {
    const response = await api.request(method, path);
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(response.body).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('ignores query strings and credentials it does not need', async () => {
    expect((await api.get('/readyz?verbose=1&x[]=2', { headers: { authorization: 'Bearer garbage' } })).status).toBe(200);
    expect((await api.get('/livez?%zz', { admin: 'wrong-key' })).status).toBe(200);
  });

  inProcess.it('answers /readyz 503 naming the check while draining, and /livez stays 200', async () => {
    api.ctx.lifecycle.draining = true;
    try {
      const ready = await api.get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(ready.headers.get('retry-after')).toBe('1');
      expect(ready.body).toMatchObject({ code: 'upstream_unavailable', status: 503, errors: [{ path: 'draining' }] });
      expect((await api.get('/livez')).status).toBe(200);
    } finally {
      api.ctx.lifecycle.draining = false;
    }
  });

  it('answers /readyz 503 when the database lacks a migration this version ships', async () => {
    const newest = sql`(SELECT max(created_at) FROM drizzle.__drizzle_migrations)`;
    await api.db.execute(sql`UPDATE drizzle.__drizzle_migrations SET created_at = created_at - 1 WHERE created_at = ${newest}`);
    try {
      const ready = await api.get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.errors).toEqual([expect.objectContaining({ path: 'migrations' })]);
    } finally {
      await api.db.execute(sql`UPDATE drizzle.__drizzle_migrations SET created_at = created_at + 1 WHERE created_at = ${newest}`);
    }
    expect((await api.get('/readyz')).status).toBe(200);
  });
});

describe.each(databaseKinds)('readiness with a busy database on %s', (kind) => {
  inProcess.it(
    'answers /readyz 503 within READINESS_TIMEOUT_MS when no connection is free, while /livez answers at once',
    async () => {
      const api = await startTestServer(kind, { READINESS_TIMEOUT_MS: '300', DATABASE_POOL_SIZE: '1', DATABASE_POOL_WAIT_MS: '5000' });
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      // A transaction holding the only connection (on PGlite: the only session) until released.
      const holder = api.db.transaction(async (tx) => {
        await tx.execute(sql`SELECT 1`);
        await held;
      });
      try {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const started = Date.now();
        const ready = await api.get('/readyz');
        expect(ready.status).toBe(503);
        expect(ready.body.errors).toEqual([expect.objectContaining({ path: 'database', message: 'did not answer within 300 ms' })]);
        expect(Date.now() - started).toBeLessThan(3000);
        expect((await api.get('/livez')).status).toBe(200);
      } finally {
        release();
        await holder;
      }
      expect((await api.get('/readyz')).status).toBe(200);
      await api.close();
    },
    90_000,
  );

  if (kind === 'postgres') {
    it('answers /readyz 503 while the LISTEN connection is down, and 200 once it is back', async () => {
      const api = await startTestServer(kind, { READINESS_TIMEOUT_MS: '1000' });
      try {
        await api.db.execute(
          sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'tourline listen' AND datname = current_database()`,
        );
        let sawListenerDown = false;
        for (let i = 0; i < 50 && !sawListenerDown; i++) {
          const ready = await api.get('/readyz');
          sawListenerDown = ready.status === 503 && ready.body.errors.some((e: { path: string }) => e.path === 'listener');
          if (!sawListenerDown) await new Promise((resolve) => setTimeout(resolve, 5));
        }
        expect(sawListenerDown).toBe(true);
        await expect.poll(async () => (await api.get('/readyz')).status, { timeout: 10_000 }).toBe(200);
      } finally {
        await api.close();
      }
    }, 90_000);
  }
});

inProcess.describe.each(databaseKinds)('the log of a planned drain on %s', (kind) => {
  it('writes nothing at error level while /readyz is probed, and ends with one line that the instance stopped', async () => {
    const written: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void written.push(line) });
    const api = await startTestServer(kind, { LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '600' }, { logger });
    try {
      const closed = api.close();
      for (let i = 0; i < 4; i += 1) expect((await api.get('/readyz')).status).toBe(503);
      await closed;
    } finally {
      await api.close();
    }
    const lines = written.map((l) => JSON.parse(l) as { level: number; msg: string; err?: unknown; res?: { statusCode: number } });
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    const probes = lines.filter((l) => l.res?.statusCode === 503);
    expect(probes).toHaveLength(4);
    for (const probe of probes) expect(probe).toMatchObject({ level: 30, msg: 'request completed' });
    expect(probes.filter((l) => l.err)).toEqual([]);
    const stopped = lines.filter((l) => l.msg === 'Tourline stopped');
    expect(stopped).toHaveLength(1);
    expect(stopped[0]).toMatchObject({ level: 30, requestsDuringDrain: 4, webSocketsClosed: 0 });
    expect((stopped[0] as unknown as { durationMs: number }).durationMs).toBeGreaterThanOrEqual(600);
  }, 60_000);
});
