import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { decodeCursor, readChangePages } from '../../server/engine/changeFeed.js';
import { CHANGE_LOG_LOCK, CHANGES_CHANNEL, recordChanges } from '../../server/engine/changeLog.js';
import { GAP_SETTLE_MS } from '../../server/engine/changeNotifier.js';
import { sharedReader } from '../../server/http/wsConnection.js';
import { pruneChangeLog } from '../../server/jobs/changeRetention.js';
import { databaseKinds } from '../helpers/databases.js';
import { writeOutOfOrder } from '../helpers/outOfOrderWriters.js';
import { startTestServer, useTestServer, type TestServer } from '../helpers/server.js';
import { inProcess } from '../helpers/target.js';
import { SyncSocket } from '../helpers/wsClient.js';

let nextAccount = 6100;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function withServer(kind: (typeof databaseKinds)[number], env: Record<string, string>, run: (api: TestServer) => Promise<void>) {
  const api = await startTestServer(kind, env);
  try {
    await run(api);
  } finally {
    await api.close();
  }
}

describe.each(databaseKinds)('live changes over /sync/ws on %s', (kind) => {
  const api = useTestServer(kind);

  async function driver() {
    const personalnummer = nextAccount++;
    const token = await api.token(personalnummer);
    const cursor = (await api.get('/sync/cursor', { token })).body.cursor as string;
    return { personalnummer, token, cursor };
  }

  const addCar = async (token: string, plate: string) => (await api.post('/me/cars', { plate }, { token })).body.car;

  /** Opens a socket, resumes and waits for the catch-up answer. */
  async function resumed(token: string, cursor: string | null) {
    const socket = await SyncSocket.open(api.url, { token });
    socket.send({ type: 'resume', cursor });
    await socket.next((m) => m.type === 'changes');
    return socket;
  }

  describe('authentication', () => {
    it('refuses the upgrade with 401 without a token', async () => {
      await expect(SyncSocket.open(api.url)).rejects.toMatchObject({ status: 401 });
    });

    it('refuses the upgrade with 401 for an invalid token, in the header or as subprotocol', async () => {
      await expect(SyncSocket.open(api.url, { token: 'not.a.token' })).rejects.toMatchObject({ status: 401 });
      await expect(SyncSocket.open(api.url, { protocols: ['bearer', 'abc.def.ghi'] })).rejects.toMatchObject({ status: 401 });
    });

    it('refuses the upgrade with 401 for an inactive account', async () => {
      const { personalnummer, token } = await driver();
      await api.seedAccount(personalnummer, 'Gesperrt', false);
      await expect(SyncSocket.open(api.url, { token })).rejects.toMatchObject({ status: 401 });
    });

    it('accepts the token as the subprotocol pair bearer, <token> and answers the bearer subprotocol', async () => {
      const { token, cursor } = await driver();
      const socket = await SyncSocket.open(api.url, { protocols: ['bearer', token] });
      try {
        expect(socket.ws.protocol).toBe('bearer');
        socket.send({ type: 'resume', cursor });
        const answer = await socket.next((m) => m.type === 'changes');
        expect(answer).toEqual({ type: 'changes', changes: [], cursor });
      } finally {
        await socket.close();
      }
    });

    it.each([
      ['without a key', { 'sec-websocket-version': '13' }, 'Sec-WebSocket-Key'],
      ['with a key that is not 16 bytes in base64', { 'sec-websocket-key': 'kurz', 'sec-websocket-version': '13' }, 'Sec-WebSocket-Key'],
      ['of another protocol version', { 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '7' }, 'Version'],
    ])('refuses a handshake %s with 400 problem+json', async (_what, headers, named) => {
      const { token } = await driver();
      const answer = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
        const req = http.request(`${api.url}/sync/ws`, {
          headers: { connection: 'Upgrade', upgrade: 'websocket', authorization: `Bearer ${token}`, ...headers },
        });
        req.on('upgrade', () => reject(new Error('upgraded')));
        req.on('response', (res) => {
          let body = '';
          res.on('data', (chunk) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, type: res.headers['content-type'] ?? '', body }));
        });
        req.on('error', reject);
        req.end();
      });
      expect(answer.status).toBe(400);
      expect(answer.type).toBe('application/problem+json');
      expect(JSON.parse(answer.body)).toMatchObject({ status: 400, code: 'validation', detail: expect.stringContaining(named) });
    });

    it('answers a plain GET without a token with 401, and with one with 400 saying it takes a handshake', async () => {
      const { token } = await driver();
      expect(await api.get('/sync/ws')).toMatchObject({ status: 401, body: { code: 'unauthorized' } });
      expect(await api.get('/sync/ws', { token })).toMatchObject({
        status: 400,
        body: { code: 'validation', detail: expect.stringContaining('WebSocket handshake') },
      });
    });

    it('refuses an upgrade on another path with 404', async () => {
      const { token } = await driver();
      const WebSocket = (await import('ws')).default;
      const ws = new WebSocket(`${api.url.replace('http', 'ws')}/elsewhere`, { headers: { authorization: `Bearer ${token}` } });
      const status = await new Promise((resolve) => ws.once('unexpected-response', (_req, res) => resolve(res.statusCode)));
      expect(status).toBe(404);
    });
  });

  describe('resume and live delivery', () => {
    it('sends what was missed since the cursor, then every new change of the caller as it commits', async () => {
      const { token, cursor } = await driver();
      const missed = [await addCar(token, `W-${cursor.slice(-6)}-1`), await addCar(token, `W-${cursor.slice(-6)}-2`)];
      const socket = await SyncSocket.open(api.url, { token });
      try {
        socket.send({ type: 'resume', cursor });
        // The catch-up reads up to the head the instance learns from the commits' notifications:
        // right after the driver's own writes, the second car may come in the next message.
        await expect.poll(() => socket.changes().map((c) => c.id), { timeout: 5000 }).toEqual(missed.map((c) => c.id));
        const caughtUp = socket.messages.length;
        const catchUp = socket.messages.findLast((m) => m.type === 'changes')!;
        expect(catchUp.cursor).not.toBe(cursor);

        const live = await addCar(token, `W-${cursor.slice(-6)}-3`);
        const next = await socket.next((m) => m.type === 'changes' && (m.changes?.length ?? 0) > 0, caughtUp);
        expect(next.changes).toEqual([expect.objectContaining({ entity: 'car', op: 'upsert', id: live.id, data: live })]);
        expect(next.changes![0].seq).toBeGreaterThan(socket.changes()[1].seq);

        const pulled = await api.get(`/sync/changes?since=${catchUp.cursor}`, { token });
        expect(pulled.body.changes.map((c: { seq: number }) => c.seq)).toEqual([next.changes![0].seq]);
        expect(pulled.body.cursor).toBe(next.cursor);
      } finally {
        await socket.close();
      }
    });

    it('answers a resume without a cursor with everything retained for the caller', async () => {
      const { token } = await driver();
      const car = await addCar(token, `X-${Date.now()}`);
      const socket = await resumed(token, null);
      try {
        // The first page reads up to the instance's head, which learns of the car's commit from its
        // notification: on a busy machine the car may come in the next message.
        await expect.poll(() => socket.changes().map((c) => c.id), { timeout: 5000 }).toContain(car.id);
      } finally {
        await socket.close();
      }
    });

    it("never sends another driver's changes", async () => {
      const a = await driver();
      const b = await driver();
      const socket = await resumed(a.token, a.cursor);
      try {
        await addCar(b.token, `B-${b.personalnummer}`);
        const own = await addCar(a.token, `A-${a.personalnummer}`);
        const next = await socket.next((m) => m.type === 'changes', 1);
        expect(next.changes!.map((c) => c.id)).toEqual([own.id]);
        await sleep(200);
        expect(socket.changes().map((c) => c.id)).toEqual([own.id]);
      } finally {
        await socket.close();
      }
    });

    it('sends every change exactly once and in order when commits race the resume', async () => {
      const { personalnummer, token, cursor } = await driver();
      const writes = [...Array(30).keys()].map(async (i) => {
        await sleep(i * 3);
        return recordChanges(api.db, [
          {
            entity: 'car',
            op: 'upsert',
            id: `race-${i}`,
            accountId: personalnummer,
            data: { id: `race-${i}`, accountId: personalnummer, plate: `R-${i}`, active: true },
          },
        ]);
      });
      await sleep(20);
      const socket = await SyncSocket.open(api.url, { token });
      try {
        socket.send({ type: 'resume', cursor });
        const seqs = (await Promise.all(writes)).map(Number);
        await socket.next(() => socket.changes().length >= 30);
        await sleep(300);
        const received = socket.changes().map((c) => c.seq);
        expect(received).toHaveLength(30);
        expect([...received].sort((x, y) => x - y)).toEqual(received);
        expect(new Set(received)).toEqual(new Set(seqs));
        const cursors = socket.messages.map((m) => m.cursor);
        expect(new Set(cursors).size).toBe(cursors.length);
      } finally {
        await socket.close();
      }
    });

    inProcess.it('reads for every socket woken by one commit in one statement, each account its own page', async () => {
      const drivers = await Promise.all(Array.from({ length: 6 }, () => driver()));
      const sockets = await Promise.all(drivers.map((d) => resumed(d.token, d.cursor)));
      try {
        await api.ctx.changes.quiet();
        const before = api.ctx.database.queries.count;
        await recordChanges(
          api.db,
          drivers.map((d) => ({
            entity: 'car' as const,
            op: 'upsert' as const,
            id: `batch-${d.personalnummer}`,
            accountId: d.personalnummer,
            data: { id: `batch-${d.personalnummer}`, accountId: d.personalnummer, plate: `B-${d.personalnummer}`, active: true },
          })),
        );
        const written = api.ctx.database.queries.count;
        await Promise.all(sockets.map((s) => s.next((m) => m.type === 'changes', 1)));
        sockets.forEach((s, i) => expect(s.changes().map((c) => c.id)).toEqual([`batch-${drivers[i].personalnummer}`]));
        // One read with its settings (and on PostgreSQL its begin and commit), not a read per
        // socket (12 statements and more); a background job's statement may fall in between. The
        // read may start before the write's answer arrives (the commit's notification comes
        // first), so its statements are counted from before the write.
        expect(api.ctx.database.queries.count - before).toBeGreaterThanOrEqual(3);
        expect(api.ctx.database.queries.count - written).toBeLessThanOrEqual(7);
        expect(written - before).toBeGreaterThan(0);
      } finally {
        await Promise.all(sockets.map((s) => s.close()));
      }
    });

    inProcess.it('reads a reconnect storm in statements of at most the batch size, the longest waiting first', async () => {
      const drivers = await Promise.all(Array.from({ length: 5 }, () => driver()));
      const cars = await Promise.all(drivers.map((d) => addCar(d.token, `S-${d.personalnummer}`)));
      // The real database, with its transactions counted: each read of the log is one.
      let reads = 0;
      const db = new Proxy(api.ctx.database.db, {
        get: (target, key, receiver) =>
          key === 'transaction'
            ? (...args: Parameters<typeof target.transaction>) => {
                reads += 1;
                return target.transaction(...args);
              }
            : Reflect.get(target, key, receiver),
      });
      const readPage = sharedReader({ ...api.ctx, database: { ...api.ctx.database, db } }, 2);
      const answered: number[] = [];
      const pages = await Promise.all(
        drivers.map((d, i) =>
          readPage(d.personalnummer, decodeCursor(api.ctx.database.epoch, d.cursor)).then((page) => {
            answered.push(i);
            return page;
          }),
        ),
      );
      expect(reads).toBe(3);
      expect(answered).toEqual([0, 1, 2, 3, 4]);
      pages.forEach((page, i) => expect(page.changes.map((c) => c.id)).toEqual([cars[i].id]));
    });

    inProcess.it('answers each reader of a batch its own page, and a refusal only to the reader whose cursor expired', async () => {
      const old = await driver();
      const fresh = await driver();
      await addCar(old.token, `O-${old.personalnummer}`);
      await pruneChangeLog(api.db, new Date(Date.now() + 60_000));
      const car = await addCar(fresh.token, `F-${fresh.personalnummer}`);
      const [expired, page] = await readChangePages(
        api.db,
        [
          { personalnummer: old.personalnummer, sinceSeq: decodeCursor(api.ctx.database.epoch, old.cursor) },
          { personalnummer: fresh.personalnummer, sinceSeq: undefined },
        ],
        10,
        'cursor',
      );
      expect(expired).toMatchObject({ code: 'validation', errors: [{ path: 'cursor', message: 'cursor expired' }] });
      expect(page).toMatchObject({ changes: [{ entity: 'car', id: car.id }], hasMore: false });
    });

    it('starts over from a new cursor when the client resumes again on the same socket', async () => {
      const { token, cursor } = await driver();
      const car = await addCar(token, `Y-${Date.now()}`);
      const socket = await resumed(token, cursor);
      try {
        // The first resume may still send a message after its catch-up (an empty one as the head
        // moves): the second resume's answer is the one that brings the car again.
        const from = socket.messages.length;
        socket.send({ type: 'resume', cursor });
        const again = await socket.next((m) => m.type === 'changes' && (m.changes?.length ?? 0) > 0, from);
        expect(again.changes!.map((c) => c.id)).toEqual([car.id]);
      } finally {
        await socket.close();
      }
    });
  });

  describe('bad client messages', () => {
    it.each([
      ['text that is not JSON', 'hello'],
      ['an unknown type', { type: 'subscribe' }],
      ['a resume with a number as cursor', { type: 'resume', cursor: 42 }],
    ])('answers %s with an error message and keeps the connection', async (_what, message) => {
      const { token } = await driver();
      const socket = await SyncSocket.open(api.url, { token });
      try {
        socket.send(message);
        expect(await socket.next()).toMatchObject({ type: 'error', code: 'validation' });
        socket.send({ type: 'ping' });
        expect(await socket.next((m) => m.type === 'pong')).toEqual({ type: 'pong' });
      } finally {
        await socket.close();
      }
    });

    it('answers a binary message with an error message', async () => {
      const { token } = await driver();
      const socket = await SyncSocket.open(api.url, { token });
      try {
        socket.ws.send(Buffer.from([1, 2, 3]));
        expect(await socket.next()).toMatchObject({ type: 'error', code: 'validation' });
      } finally {
        await socket.close();
      }
    });

    it('answers a garbage cursor with an error message; a later valid resume works', async () => {
      const { token, cursor } = await driver();
      const socket = await SyncSocket.open(api.url, { token });
      try {
        socket.send({ type: 'resume', cursor: 'garbage' });
        expect(await socket.next()).toMatchObject({ type: 'error', code: 'validation' });
        socket.send({ type: 'resume', cursor });
        expect(await socket.next((m) => m.type === 'changes')).toEqual({ type: 'changes', changes: [], cursor });
      } finally {
        await socket.close();
      }
    });

    it('sends a backlog of several pages, each once and in order, up to the last', async () => {
      const { personalnummer, token, cursor } = await driver();
      const ids = Array.from({ length: 1_201 }, (_, i) => `backlog-${personalnummer}-${i}`);
      await recordChanges(
        api.db,
        ids.map((id) => ({ entity: 'car' as const, op: 'delete' as const, id, accountId: personalnummer })),
      );
      const socket = await SyncSocket.open(api.url, { token });
      try {
        socket.send({ type: 'resume', cursor });
        await expect.poll(() => socket.changes().length, { timeout: 15_000 }).toBe(ids.length);
        const pages = socket.messages.filter((m) => m.type === 'changes');
        expect(pages.map((m) => m.changes?.length)).toEqual([500, 500, 201]);
        expect(socket.changes().map((c) => c.id)).toEqual(ids);
        // The last page's cursor is where a later resume starts: nothing is left behind it.
        const again = await resumed(token, pages[2].cursor as string);
        expect(again.changes()).toEqual([]);
        await again.close();
      } finally {
        await socket.close();
      }
    });

    it('answers an expired cursor with an error that tells the client to resync', async () => {
      const { token, cursor } = await driver();
      await addCar(token, `Z-${Date.now()}`);
      await pruneChangeLog(api.db, new Date(Date.now() + 60_000));
      const socket = await SyncSocket.open(api.url, { token });
      try {
        socket.send({ type: 'resume', cursor });
        const error = await socket.next();
        expect(error).toMatchObject({ type: 'error', code: 'validation' });
        expect(error.message).toMatch(/older than the retained change log.*Resync/);
        expect(error).toMatchObject({ errors: [{ path: 'cursor', message: 'cursor expired' }] });
      } finally {
        await socket.close();
      }
    });
  });

  describe('connection limits', () => {
    it('closes with 4401 when the token expires', async () => {
      await withServer(kind, { DEV_TOKEN_TTL_SECONDS: '2' }, async (short) => {
        const token = await short.token(6001);
        const socket = await SyncSocket.open(short.url, { token });
        socket.send({ type: 'resume', cursor: null });
        await socket.next((m) => m.type === 'changes');
        const started = Date.now();
        const closed = await socket.closed;
        expect(closed.code).toBe(4401);
        expect(Date.now() - started).toBeLessThan(4000);
      });
    });

    it('terminates a connection that stops answering pings', async () => {
      await withServer(kind, { WS_HEARTBEAT_SECONDS: '1' }, async (fast) => {
        const token = await fast.token(6002);
        const socket = await SyncSocket.open(fast.url, { token, autoPong: false });
        const closed = await socket.closed;
        expect(closed.code).toBe(1006);
      });
    });

    it('keeps a connection that answers pings', async () => {
      await withServer(kind, { WS_HEARTBEAT_SECONDS: '1' }, async (fast) => {
        const token = await fast.token(6003);
        const socket = await SyncSocket.open(fast.url, { token });
        await sleep(3500);
        expect(socket.ws.readyState).toBe(socket.ws.OPEN);
        await socket.close();
      });
    });

    it('closes a client that does not read with 4408 instead of buffering without limit', async () => {
      // The heartbeat checks the buffer before the missing pong: a slow machine needs the time to
      // write the backlog before the second beat, or the socket goes for the pong alone (1006).
      await withServer(kind, { WS_HEARTBEAT_SECONDS: '3', WS_MAX_BUFFERED_BYTES: '65536' }, async (small) => {
        const personalnummer = 6004;
        const token = await small.token(personalnummer);
        const socket = await SyncSocket.open(small.url, { token });
        socket.send({ type: 'resume', cursor: null });
        await socket.next((m) => m.type === 'changes');
        socket.ws.pause();
        // Random text: permessage-deflate must not shrink the backlog below the limit.
        const big = randomBytes(150_000).toString('base64');
        const note = (id: string) => ({
          id,
          deliveryId: id,
          text: big,
          imageAttachment: null,
          imageAttachmentId: null,
          authorCarId: null,
          creditDeliveryItemId: null,
          isAmountCreditNote: false,
          createdAt: new Date().toISOString(),
          updatedAt: new Date().toISOString(),
        });
        for (let i = 0; i < 8; i++) {
          await recordChanges(
            small.db,
            [...Array(5).keys()].map((j) => ({
              entity: 'note',
              op: 'upsert' as const,
              id: `n-${i}-${j}`,
              accountId: personalnummer,
              data: note(`n-${i}-${j}`),
            })),
          );
        }
        await sleep(6500);
        socket.ws.resume();
        const closed = await socket.closed;
        expect(closed.code).toBe(4408);
      });
    }, 60_000);

    it('closes open sockets with 1012 (reconnect elsewhere) when the server shuts down', async () => {
      const server = await startTestServer(kind);
      const token = await server.token(6005);
      const socket = await SyncSocket.open(server.url, { token });
      await server.close();
      expect((await socket.closed).code).toBe(1012);
    }, 60_000);

    it('closes the sockets SHUTDOWN_WS_BATCH_SIZE at a time, with a pause between batches', async () => {
      const server = await startTestServer(kind, { SHUTDOWN_WS_BATCH_SIZE: '2' });
      const token = await server.token(6006);
      const sockets = await Promise.all(Array.from({ length: 5 }, () => SyncSocket.open(server.url, { token })));
      const closedAt = sockets.map((s) => s.closed.then((c) => ({ code: c.code, at: Date.now() })));
      await server.close();
      const closes = (await Promise.all(closedAt)).sort((a, b) => a.at - b.at);
      expect(closes.every((c) => c.code === 1012)).toBe(true);
      // Three batches (2, 2, 1) with two pauses of 100 ms between them.
      expect(closes[4].at - closes[0].at).toBeGreaterThanOrEqual(180);
    }, 60_000);
  });
});

inProcess.describe('the live reads of an instance on postgres', () => {
  const api = useTestServer('postgres');

  async function resumedDriver() {
    const personalnummer = nextAccount++;
    const token = await api.token(personalnummer);
    const cursor = (await api.get('/sync/cursor', { token })).body.cursor as string;
    const socket = await SyncSocket.open(api.url, { token });
    socket.send({ type: 'resume', cursor });
    await socket.next((m) => m.type === 'changes');
    return { personalnummer, token, socket };
  }

  const carChange = (personalnummer: number, plate: string) => ({
    entity: 'car' as const,
    op: 'upsert' as const,
    id: `car-${plate}`,
    accountId: personalnummer,
    data: { id: `car-${plate}`, accountId: personalnummer, plate, active: true },
  });
  const plateOf = (m: { changes?: { data?: unknown }[] }) => m.changes!.map((c) => (c.data as { plate?: string }).plate);
  const newPlate = () => `W-${randomBytes(3).toString('hex')}`;

  it('reads without the change log lock: a writer holding it does not hold up the sockets', async () => {
    const driver = await resumedDriver();
    // A writer in flight that has not drawn a seq yet: it holds the lock shared, as a writer does until its commit.
    const writer = new pg.Client({ connectionString: api.ctx.config.databaseUrl! });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      await writer.query('SELECT pg_advisory_xact_lock_shared($1)', [CHANGE_LOG_LOCK]);
      const plate = newPlate();
      expect((await api.post('/me/cars', { plate }, { token: driver.token })).status).toBe(200);
      // A read under the lock would wait for the writer, and the socket would time out here.
      const received = await driver.socket.next((m) => m.type === 'changes' && m.changes!.some((c) => c.entity === 'car'), 0, 5000);
      expect(plateOf(received)).toEqual([plate]);
      const waiting = await api.db.execute(
        sql`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = ${CHANGE_LOG_LOCK} AND NOT granted`,
      );
      expect((waiting.rows as { n: number }[])[0].n).toBe(0);
    } finally {
      await writer.end();
      await driver.socket.close();
    }
  });

  it('holds a commit back while a change below it is in flight, then sends both', async () => {
    const [below, above] = await Promise.all([resumedDriver(), resumedDriver()]);
    const [belowPlate, abovePlate] = [newPlate(), newPlate()];
    let commit!: () => void;
    const release = new Promise<void>((resolve) => (commit = resolve));
    let drawn!: () => void;
    const seqDrawn = new Promise<void>((resolve) => (drawn = resolve));
    const writer = api.db.transaction(async (tx) => {
      await recordChanges(tx, [carChange(below.personalnummer, belowPlate)]);
      drawn();
      await release;
    });
    try {
      await seqDrawn;
      await recordChanges(api.db, [carChange(above.personalnummer, abovePlate)]);
      const aboveReceived = above.socket.next((m) => m.type === 'changes' && m.changes!.length > 0).then(() => Date.now());
      // Longer than the notifier waits before it settles the gap under the lock (which waits for the writer too).
      await sleep(GAP_SETTLE_MS + 300);
      const committedAt = Date.now();
      commit();
      await writer;
      const belowReceived = await below.socket.next((m) => m.type === 'changes' && m.changes!.length > 0);
      expect(plateOf(belowReceived)).toEqual([belowPlate]);
      expect(await aboveReceived).toBeGreaterThanOrEqual(committedAt);
      expect(above.socket.changes().map((c) => (c.data as { plate?: string }).plate)).toEqual([abovePlate]);
    } finally {
      commit();
      await writer.catch(() => undefined);
      await Promise.all([below.socket.close(), above.socket.close()]);
    }
  });

  it('sends every committed change once and in order while writers commit out of order and some roll back', async () => {
    const driver = await resumedDriver();
    // The driver's second device, resumed from the same cursor.
    const cursor = (await api.get('/sync/cursor', { token: driver.token })).body.cursor as string;
    const second = await SyncSocket.open(api.url, { token: driver.token });
    second.send({ type: 'resume', cursor });
    await second.next((m) => m.type === 'changes');
    const carSeqs = (socket: SyncSocket) => socket.changes().flatMap((c) => (c.entity === 'car' ? [c.seq] : []));
    try {
      const committed = await writeOutOfOrder(
        api.db,
        (w, t) => carChange(driver.personalnummer, `${w}-${t}-${randomBytes(2).toString('hex')}`),
        { writers: 20, transactions: 15, holdMs: 5 },
      );
      expect(committed.size).toBeGreaterThan(200);
      for (const socket of [driver.socket, second]) {
        for (let tries = 0; carSeqs(socket).length < committed.size && tries < 100; tries++) await sleep(50);
        const seen = carSeqs(socket);
        expect(seen.length).toBe(new Set(seen).size);
        expect([...seen].sort((x, y) => x - y)).toEqual(seen);
        expect(new Set(seen)).toEqual(committed);
      }
    } finally {
      await Promise.all([driver.socket.close(), second.close()]);
    }
  }, 60_000);

  it('sends a commit above a seq whose writer rolled back', async () => {
    const driver = await resumedDriver();
    const plate = newPlate();
    await api.db
      .transaction(async (tx) => {
        await recordChanges(tx, [carChange(driver.personalnummer, `R-${plate}`)]);
        throw new Error('rolled back');
      })
      .catch(() => undefined);
    await recordChanges(api.db, [carChange(driver.personalnummer, plate)]);
    try {
      const received = await driver.socket.next((m) => m.type === 'changes' && m.changes!.length > 0);
      expect(plateOf(received)).toEqual([plate]);
    } finally {
      await driver.socket.close();
    }
  });

  it('announces the seqs a commit took, as runs, with the accounts it concerns', async () => {
    const [a, b] = [nextAccount++, nextAccount++];
    const listener = new pg.Client({ connectionString: api.ctx.config.databaseUrl! });
    await listener.connect();
    const payloads: string[] = [];
    listener.on('notification', (n) => payloads.push(n.payload ?? ''));
    try {
      await listener.query(`LISTEN ${CHANGES_CHANNEL}`);
      const last = await recordChanges(api.db, [carChange(a, newPlate()), carChange(b, newPlate()), carChange(a, newPlate())]);
      const expected = `${last! - 2}-${last}:${a},${b}`;
      for (let tries = 0; !payloads.includes(expected) && tries < 100; tries++) await sleep(20);
      expect(payloads).toContain(expected);
    } finally {
      await listener.end();
    }
  });

  const announcements = [
    { when: 'after the LISTEN connection was lost (an empty wake-up)', payload: () => '' },
    { when: 'for a commit whose seqs did not fit its announcement', payload: (account: number) => `?:${account}` },
  ];
  it.each(announcements)('reads up to a head read under the lock $when', async ({ payload }) => {
    const driver = await resumedDriver();
    const plate = newPlate();
    // A commit whose seqs are never announced.
    await api.db.execute(
      sql`INSERT INTO change_log (entity, op, entity_id, account_id, data) VALUES ('car', 'upsert', ${`car-${plate}`}, ${driver.personalnummer}, ${JSON.stringify(carChange(driver.personalnummer, plate).data)}::jsonb)`,
    );
    const announcer = new pg.Client({ connectionString: api.ctx.config.databaseUrl! });
    await announcer.connect();
    try {
      await announcer.query('SELECT pg_notify($1, $2)', [CHANGES_CHANNEL, payload(driver.personalnummer)]);
      const received = await driver.socket.next((m) => m.type === 'changes' && m.changes!.length > 0);
      expect(plateOf(received)).toEqual([plate]);
    } finally {
      await announcer.end();
      await driver.socket.close();
    }
  });
});
