import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { encodeCursor, readChanges } from '../../server/engine/changeFeed.js';
import { recordChanges } from '../../server/engine/changeLog.js';
import { pruneChangeLog } from '../../server/jobs/changeRetention.js';
import { databaseKinds } from '../helpers/databases.js';
import { writeOutOfOrder } from '../helpers/outOfOrderWriters.js';
import { startTestServer, useTestServer } from '../helpers/server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let nextAccount = 5100;

interface ChangeBody {
  seq: number;
  entity: string;
  op: string;
  id: string;
  tourId?: string;
  data?: any;
}

describe.each(databaseKinds)('pulling changes on %s', (kind) => {
  const api = useTestServer(kind);

  async function driver() {
    const personalnummer = nextAccount++;
    return { personalnummer, token: await api.token(personalnummer) };
  }

  /** Every change the driver may see, page by page from the start. */
  async function pullAll(token: string, since?: string, limit = 1000) {
    const changes: ChangeBody[] = [];
    let cursor = since;
    for (;;) {
      const query = new URLSearchParams({ limit: String(limit), ...(cursor ? { since: cursor } : {}) });
      const response = await api.get(`/sync/changes?${query}`, { token });
      expect(response.status).toBe(200);
      changes.push(...response.body.changes);
      cursor = response.body.cursor;
      if (!response.body.hasMore) return { changes, cursor: cursor! };
    }
  }

  /** A tour change as the tour import writes it: visible to the tour's driver only. */
  const tourChange = (accountId: number, tourId = randomUUID()) =>
    recordChanges(api.db, [
      {
        entity: 'tour',
        op: 'upsert',
        id: tourId,
        tourId,
        accountId,
        data: { id: tourId, accountId, tourDate: '2026-03-11', name: 'Tour Nord' },
      },
    ]);

  it("shows a driver their own tours and cars and everyone's payment methods and services, never another driver's", async () => {
    const a = await driver();
    const b = await driver();
    const carA = (await api.post('/me/cars', { plate: `A-${a.personalnummer}` }, { token: a.token })).body.car;
    const carB = (await api.post('/me/cars', { plate: `B-${b.personalnummer}` }, { token: b.token })).body.car;
    const tourA = randomUUID();
    const tourB = randomUUID();
    await tourChange(a.personalnummer, tourA);
    await tourChange(b.personalnummer, tourB);
    const method = (await api.post('/payment-methods', { code: `bar-${a.personalnummer}`, name: 'Bar' }, { token: a.token })).body
      .paymentMethod;
    const service = (await api.post('/services', { key: `s-${a.personalnummer}`, name: 'Altglas', kind: 'boolean' }, { token: b.token }))
      .body.service;

    const seenBy = async (token: string) => (await pullAll(token)).changes.map((c) => `${c.entity}:${c.id}`);
    const seenA = await seenBy(a.token);
    const seenB = await seenBy(b.token);
    expect(seenA).toEqual(
      expect.arrayContaining([`car:${carA.id}`, `tour:${tourA}`, `paymentMethod:${method.id}`, `service:${service.id}`]),
    );
    expect(seenA).not.toContain(`car:${carB.id}`);
    expect(seenA).not.toContain(`tour:${tourB}`);
    expect(seenB).toEqual(
      expect.arrayContaining([`car:${carB.id}`, `tour:${tourB}`, `paymentMethod:${method.id}`, `service:${service.id}`]),
    );
    expect(seenB).not.toContain(`car:${carA.id}`);
    expect(seenB).not.toContain(`tour:${tourA}`);
  });

  it('carries seq, entity, op, id, tourId and the public shape of each change', async () => {
    const a = await driver();
    const { cursor } = await pullAll(a.token);
    const car = (await api.post('/me/cars', { plate: `C-${a.personalnummer}` }, { token: a.token })).body.car;
    const tourId = randomUUID();
    await tourChange(a.personalnummer, tourId);
    const { changes } = await pullAll(a.token, cursor);
    expect(changes).toHaveLength(2);
    expect(changes[0]).toEqual({ seq: expect.any(Number), entity: 'car', op: 'upsert', id: car.id, data: car });
    expect(changes[1]).toMatchObject({ entity: 'tour', op: 'upsert', id: tourId, tourId });
    expect(changes[1].seq).toBeGreaterThan(changes[0].seq);
  });

  it('pages in seq order with hasMore until the last page, and a cursor never repeats a change', async () => {
    const a = await driver();
    const start = (await api.get('/sync/cursor', { token: a.token })).body.cursor;
    for (let i = 0; i < 7; i++) await api.post('/me/cars', { plate: `P-${a.personalnummer}-${i}` }, { token: a.token });
    const first = await api.get(`/sync/changes?since=${start}&limit=3`, { token: a.token });
    expect(first.body).toMatchObject({ hasMore: true });
    expect(first.body.changes).toHaveLength(3);
    const { changes } = await pullAll(a.token, start, 3);
    expect(changes.map((c) => c.data.plate)).toEqual([...Array(7).keys()].map((i) => `P-${a.personalnummer}-${i}`));
    const seqs = changes.map((c) => c.seq);
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
    expect(new Set(seqs).size).toBe(7);
  });

  it('answers an empty page with the same position when nothing new happened', async () => {
    const a = await driver();
    const { cursor } = await pullAll(a.token);
    const again = await api.get(`/sync/changes?since=${cursor}`, { token: a.token });
    expect(again.body).toEqual({ changes: [], cursor, hasMore: false });
  });

  it("moves a quiet driver's cursor past other drivers' changes, so it does not expire while nothing concerns them", async () => {
    const quiet = await driver();
    const busy = await driver();
    const { cursor } = await pullAll(quiet.token);
    await tourChange(busy.personalnummer);
    const after = await api.get(`/sync/changes?since=${cursor}`, { token: quiet.token });
    expect(after.body.changes).toEqual([]);
    expect(after.body.cursor).not.toBe(cursor);
    await pruneChangeLog(api.db, new Date(Date.now() + 60_000));
    expect((await api.get(`/sync/changes?since=${after.body.cursor}`, { token: quiet.token })).status).toBe(200);
  });

  it('starts from a cursor taken with GET /sync/cursor and shows only what came after it', async () => {
    const a = await driver();
    await api.post('/me/cars', { plate: `V-${a.personalnummer}` }, { token: a.token });
    const { body } = await api.get('/sync/cursor', { token: a.token });
    const later = (await api.post('/me/cars', { plate: `N-${a.personalnummer}` }, { token: a.token })).body.car;
    const { changes } = await pullAll(a.token, body.cursor);
    expect(changes.map((c) => c.id)).toEqual([later.id]);
  });

  describe('refused cursors and parameters', () => {
    it.each([
      ['garbage', 'not-a-cursor'],
      ['base64 of something else', Buffer.from('hello').toString('base64url')],
      ['a cursor without seq', Buffer.from(JSON.stringify({ epoch: 'x' })).toString('base64url')],
      ['a negative seq', Buffer.from(JSON.stringify({ epoch: 'x', seq: -1 })).toString('base64url')],
      ['characters outside base64url', 'abc$%/'],
    ])('answers 400 validation for %s, never an empty page', async (_what, since) => {
      const a = await driver();
      const response = await api.get(`/sync/changes?since=${encodeURIComponent(since)}`, { token: a.token });
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(response.body.code).toBe('validation');
      expect(response.body.errors).toEqual([{ path: 'query.since', message: 'not a cursor' }]);
    });

    it('answers 400 for a cursor of another database (it was reset) and tells the client to resync', async () => {
      const a = await driver();
      const foreign = encodeCursor(randomUUID(), 1);
      const response = await api.get(`/sync/changes?since=${foreign}`, { token: a.token });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation');
      expect(response.body.detail).toMatch(/another database/);
      expect(response.body.detail).toMatch(/Resync/);
      expect(response.body.errors).toEqual([{ path: 'query.since', message: 'cursor from another database' }]);
    });

    it('answers 400 for a cursor ahead of the change log, which would skip what comes', async () => {
      const a = await driver();
      const { body } = await api.get('/sync/cursor', { token: a.token });
      const { epoch, seq } = JSON.parse(Buffer.from(body.cursor, 'base64url').toString('utf8'));
      const response = await api.get(`/sync/changes?since=${encodeCursor(epoch, seq + 1000)}`, { token: a.token });
      expect(response.status).toBe(400);
      expect(response.body.detail).toMatch(/ahead/);
      expect(response.body.errors).toEqual([{ path: 'query.since', message: 'cursor ahead of the change log' }]);
      expect((await api.get(`/sync/changes?since=${body.cursor}`, { token: a.token })).status).toBe(200);
    });

    it('answers 400 for a cursor of a database that was reset, even when its seq exists in the new one', async () => {
      const a = await driver();
      await api.post('/me/cars', { plate: `E-${a.personalnummer}` }, { token: a.token });
      const { cursor } = await pullAll(a.token);
      const fresh = await startTestServer(kind);
      try {
        const token = await fresh.token(a.personalnummer);
        for (let i = 0; i < 3; i++) await fresh.post('/me/cars', { plate: `F-${i}` }, { token });
        const response = await fresh.get(`/sync/changes?since=${cursor}`, { token });
        expect(response.status).toBe(400);
        expect(response.body.detail).toMatch(/another database/);
      } finally {
        await fresh.close();
      }
    });

    it.each(['0', '1001', '-5', 'ten', '1.5', '0x10', '1e2', '%2010', ''])('answers 400 for limit=%s', async (limit) => {
      const a = await driver();
      const response = await api.get(`/sync/changes?limit=${limit}`, { token: a.token });
      expect(response.status).toBe(400);
      expect(response.body.errors[0].path).toBe('query.limit');
    });

    it('answers 401 without a token', async () => {
      expect((await api.get('/sync/changes')).status).toBe(401);
      expect((await api.get('/sync/cursor')).status).toBe(401);
    });
  });

  describe('retention', () => {
    it('refuses a cursor older than the pruned change log with 400 and resync advice; a fresh start and newer cursors still work', async () => {
      const a = await driver();
      const { cursor: old } = await pullAll(a.token);
      await api.post('/me/cars', { plate: `R-${a.personalnummer}` }, { token: a.token });
      const { cursor: recent } = await pullAll(a.token, old);

      const { horizon, deleted } = await pruneChangeLog(api.db, new Date(Date.now() + 60_000));
      expect(deleted).toBeGreaterThan(0);
      expect(horizon).toBeGreaterThan(0);

      const expired = await api.get(`/sync/changes?since=${old}`, { token: a.token });
      expect(expired.status).toBe(400);
      expect(expired.body.code).toBe('validation');
      expect(expired.body.detail).toMatch(/older than the retained change log/);
      expect(expired.body.detail).toMatch(/GET \/sync\/cursor/);
      expect(expired.body.errors).toEqual([{ path: 'query.since', message: 'cursor expired' }]);

      expect((await api.get(`/sync/changes?since=${recent}`, { token: a.token })).status).toBe(200);
      const fresh = await api.get('/sync/changes', { token: a.token });
      expect(fresh.status).toBe(200);
      expect(fresh.body.changes).toEqual([]);

      const car = (await api.post('/me/cars', { plate: `S-${a.personalnummer}` }, { token: a.token })).body.car;
      const resumed = await pullAll(a.token, fresh.body.cursor);
      expect(resumed.changes.map((c) => c.id)).toEqual([car.id]);
    });

    it('prunes the old entries up to the first one to keep; an old entry behind it waits for a later run', async () => {
      const accountId = (await driver()).personalnummer;
      const seqs: number[] = [];
      for (const n of [1, 2, 3]) seqs.push((await recordChanges(api.db, [{ entity: 'tour', op: 'upsert', id: `p${n}`, accountId }]))!);
      // A transaction that started long ago may take a seq after a younger one's.
      const day = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();
      await api.db.execute(sql`UPDATE change_log SET created_at = CASE seq WHEN ${seqs[0]} THEN ${day(40)}::timestamptz
        WHEN ${seqs[1]} THEN ${day(10)}::timestamptz ELSE ${day(40)}::timestamptz END WHERE seq IN (${seqs[0]}, ${seqs[1]}, ${seqs[2]})`);
      await api.db.execute(sql`UPDATE change_log SET created_at = ${day(40)}::timestamptz WHERE seq < ${seqs[0]}`);

      const { horizon } = await pruneChangeLog(api.db, new Date(day(30)));
      expect(horizon).toBe(seqs[0]);
      const left = await api.db.execute<{ seq: string }>(sql`SELECT seq::text FROM change_log WHERE seq >= ${seqs[0]} ORDER BY seq`);
      expect(left.rows.map((r) => Number(r.seq))).toEqual([seqs[1], seqs[2]]);
      // The next run of the day takes them.
      expect(await pruneChangeLog(api.db, new Date(day(5)))).toEqual({ horizon: seqs[2], deleted: 2 });
    });

    it('raises the horizon to the last entry deleted, not over a seq that never committed', async () => {
      const a = await driver();
      const old = (await recordChanges(api.db, [{ entity: 'tour', op: 'upsert', id: 'old', accountId: a.personalnummer }]))!;
      await api.db
        .transaction(async (tx) => {
          await recordChanges(tx, [{ entity: 'tour', op: 'upsert', id: 'rolled back', accountId: a.personalnummer }]);
          tx.rollback();
        })
        .catch(() => undefined);
      await recordChanges(api.db, [{ entity: 'tour', op: 'upsert', id: 'new', accountId: a.personalnummer }]);
      await api.db.execute(sql`UPDATE change_log SET created_at = now() - interval '40 days' WHERE seq <= ${old}`);

      expect(await pruneChangeLog(api.db, new Date(Date.now() - 30 * 86_400_000))).toMatchObject({ horizon: old });
      // A client that had read up to the last deleted entry missed nothing.
      const { epoch } = JSON.parse(
        Buffer.from((await api.get('/sync/cursor', { token: a.token })).body.cursor, 'base64url').toString('utf8'),
      );
      const page = await api.get(`/sync/changes?since=${encodeCursor(epoch, old)}`, { token: a.token });
      expect(page.status).toBe(200);
      expect(page.body.changes.map((c: { id: string }) => c.id)).toEqual(['new']);
    });

    it('prunes only entries older than the cut and keeps the horizon when there is nothing to prune', async () => {
      const a = await driver();
      await api.post('/me/cars', { plate: `K-${a.personalnummer}` }, { token: a.token });
      const { horizon } = await pruneChangeLog(api.db, new Date(0));
      const before = await pruneChangeLog(api.db, new Date(Date.now() - 3600_000));
      expect(before).toEqual({ horizon, deleted: 0 });
      const { changes } = await pullAll(a.token);
      expect(changes.map((c) => c.data?.plate)).toContain(`K-${a.personalnummer}`);
    });
  });
});

describe.each(databaseKinds)('the change log cursor under concurrent writers on %s', (kind) => {
  const api = useTestServer(kind, { DATABASE_POOL_SIZE: '30' });

  it('never skips or repeats a committed change while many writers commit out of order', async () => {
    const reader = 5999;
    const db = api.db;
    let writing = true;

    const seen: number[] = [];
    let cursor: number | undefined;
    let polls = 0;
    const poll = async () => {
      polls += 1;
      const page = await readChanges(db, reader, cursor, 1 + Math.floor(Math.random() * 15));
      seen.push(...page.changes.filter((c) => c.entity === 'tour').map((c) => c.seq));
      cursor = page.seq;
      return page.hasMore;
    };
    const readerLoop = (async () => {
      while (writing) {
        await poll();
        await sleep(Math.random() * 2);
      }
      while (await poll());
    })();

    const committed = await writeOutOfOrder(db, (w, t) => ({ entity: 'tour', op: 'upsert', id: `${w}-${t}`, accountId: reader }), {
      writers: 20,
      transactions: 20,
      holdMs: 3,
    });
    writing = false;
    await readerLoop;

    expect(committed.size).toBeGreaterThan(300);
    expect(polls).toBeGreaterThan(20);
    expect(seen.length).toBe(new Set(seen).size);
    expect([...seen].sort((x, y) => x - y)).toEqual(seen);
    expect(new Set(seen)).toEqual(committed);
  }, 120_000);
});
