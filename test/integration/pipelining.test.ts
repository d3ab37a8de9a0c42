import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SyncEvent } from '../../shared/schemas/sync.js';
import { lastStatement, openDatabase, type Database } from '../../server/db/client.js';
import { applyEvents } from '../../server/engine/apply.js';
import { readChangePages } from '../../server/engine/changeFeed.js';
import * as schema from '../../server/db/schema.js';
import { createPostgresDatabase } from '../helpers/databases.js';
import { driverActor, newTour } from '../helpers/factories.js';

/** Counts what the process writes to the database's port (each write a message batch of one round trip), and keeps its bytes. */
function countWrites(port: number) {
  const original = { write: net.Socket.prototype._write, writev: net.Socket.prototype._writev! };
  const counter = { writes: 0, texts: [] as string[] };
  const text = (data: unknown): string =>
    Array.isArray(data)
      ? data.map((piece: { chunk: Buffer }) => text(piece.chunk)).join('')
      : Buffer.from(data as Buffer).toString('latin1');
  const counted = <F extends (...args: never[]) => unknown>(write: F) =>
    function (this: net.Socket, ...args: Parameters<F>) {
      if (this.remotePort === port) {
        counter.writes += 1;
        counter.texts.push(text(args[0]));
      }
      return write.apply(this, args);
    };
  net.Socket.prototype._write = counted(original.write);
  net.Socket.prototype._writev = counted(original.writev);
  return { counter, restore: () => Object.assign(net.Socket.prototype, { _write: original.write, _writev: original.writev }) };
}

/** SQLSTATE of `SELECT 1 / 0`. */
const DIVISION_BY_ZERO = '22012';
const UNIQUE_VIOLATION = '23505';

const warehouse = (db: Database['db'], code: string) =>
  db
    .select()
    .from(schema.warehouses)
    .where(sql`${schema.warehouses.code} = ${code}`);

const txid = async (tx: Database['db']) => (await tx.execute<{ id: string }>(sql`SELECT txid_current()::text AS id`)).rows[0].id;

/** A driver's tour of one line that takes scans, and a scan event for it. */
async function scannerOn(db: Database['db'], accountId: number) {
  const tour = await newTour(db, { accountId, positions: [{ scannable: true, quantity: 50, scannedQuantity: 0, state: 'InProgress' }] });
  const scan = (): SyncEvent => ({
    type: 'scan',
    eventId: randomUUID(),
    occurredAt: new Date().toISOString(),
    deliveryItemId: tour.deliveries[0].items[0].id,
    action: 'scan',
  });
  return { tour, actor: driverActor(accountId), scan };
}

describe('pipelined statements on PostgreSQL', () => {
  let database: Database;
  let port: number;
  let restore = () => {};

  beforeAll(async () => {
    const url = await createPostgresDatabase();
    port = Number(new URL(url).port);
    // One connection: what one transaction leaves on it, the next statement finds.
    database = await openDatabase({ url, poolSize: 1 });
  });
  afterEach(() => restore());
  afterAll(() => database?.close());
  const scanner = (accountId: number) => scannerOn(database.db, accountId);

  it("sends a transaction's begin with its first statement, and both statements run in that transaction", async () => {
    await database.db.execute(sql`SELECT 1`);
    const writes = countWrites(port);
    restore = writes.restore;
    const ids = await database.db.transaction(async (tx) => [await txid(tx), await txid(tx)]);
    restore();
    expect(ids[0]).toBe(ids[1]);
    // begin with the first statement, the second, commit: the begin cost no round trip of its own.
    expect(writes.counter.writes).toBe(3);
  });

  it('sends nothing for a transaction that runs no statement', async () => {
    await database.db.execute(sql`SELECT 1`);
    const writes = countWrites(port);
    restore = writes.restore;
    expect(await database.db.transaction(async () => 'nothing')).toBe('nothing');
    await expect(
      database.db.transaction(async () => {
        throw new Error('given up');
      }),
    ).rejects.toThrow('given up');
    restore();
    expect(writes.counter.writes).toBe(0);
  });

  it('undoes the first statement when a later one fails, and leaves the connection outside any transaction', async () => {
    const code = randomUUID();
    await expect(
      database.db.transaction(async (tx) => {
        await tx.insert(schema.warehouses).values({ code, name: 'Rolled back' });
        await tx.execute(sql`SELECT 1 / 0`);
      }),
    ).rejects.toMatchObject({ cause: { code: DIVISION_BY_ZERO } });
    const found = await database.db
      .select()
      .from(schema.warehouses)
      .where(sql`${schema.warehouses.code} = ${code}`);
    expect(found).toEqual([]);
    // Two statements on the same connection are two transactions of their own.
    expect(await txid(database.db)).not.toBe(await txid(database.db));
  });

  it('answers the statements of a transaction issued together in order, and the first failure to the caller', async () => {
    const rows = await database.db.transaction((tx) =>
      Promise.all([tx.execute<{ n: number }>(sql`SELECT 1 AS n`), tx.execute<{ n: number }>(sql`SELECT 2 AS n`)]),
    );
    expect(rows.map((r) => r.rows)).toEqual([[{ n: 1 }], [{ n: 2 }]]);
    const failing = database.db.transaction(async (tx) => {
      const [first, second] = [tx.execute(sql`SELECT 1 / 0`), tx.execute(sql`SELECT 2`)];
      second.catch(() => undefined);
      await first;
    });
    await expect(failing).rejects.toMatchObject({ cause: { code: DIVISION_BY_ZERO } });
    expect((await database.db.execute<{ n: number }>(sql`SELECT 3 AS n`)).rows).toEqual([{ n: 3 }]);
  });
  it('sends the last statement with the COMMIT: a transaction of two statements is two writes, and it is committed', async () => {
    await database.db.execute(sql`SELECT 1`);
    const code = randomUUID();
    const writes = countWrites(port);
    restore = writes.restore;
    const id = await database.db.transaction(async (tx) => {
      const first = await txid(tx);
      await lastStatement(tx, () => tx.insert(schema.warehouses).values({ code, name: 'Committed with its COMMIT' }));
      return first;
    });
    restore();
    expect(writes.counter.writes).toBe(2);
    expect(await warehouse(database.db, code)).toHaveLength(1);
    // The transaction ended: the next statements are transactions of their own, and none is the one above.
    const [next, after] = [await txid(database.db), await txid(database.db)];
    expect(next).not.toBe(after);
    expect([next, after]).not.toContain(id);
  });

  it('rolls the whole transaction back when the last statement fails, with its error for the caller', async () => {
    const code = randomUUID();
    await expect(
      database.db.transaction(async (tx) => {
        await tx.insert(schema.warehouses).values({ code, name: 'Rolled back' });
        await lastStatement(tx, () => tx.execute(sql`SELECT 1 / 0`));
      }),
    ).rejects.toMatchObject({ cause: { code: DIVISION_BY_ZERO } });
    expect(await warehouse(database.db, code)).toEqual([]);
    expect(await txid(database.db)).not.toBe(await txid(database.db));
  });

  it("answers the COMMIT's own failure to the caller of the last statement", async () => {
    // Checked at commit: the statement itself succeeds.
    await database.db.execute(sql`CREATE TEMP TABLE deferred_codes (code text UNIQUE DEFERRABLE INITIALLY DEFERRED)`);
    await expect(
      database.db.transaction((tx) => lastStatement(tx, () => tx.execute(sql`INSERT INTO deferred_codes VALUES ('a'), ('a')`))),
    ).rejects.toMatchObject({ cause: { code: UNIQUE_VIOLATION } });
    expect((await database.db.execute(sql`SELECT * FROM deferred_codes`)).rows).toEqual([]);
  });

  it('refuses a statement after the last one, which would run outside the transaction', async () => {
    const code = randomUUID();
    await expect(
      database.db.transaction(async (tx) => {
        await lastStatement(tx, () => tx.insert(schema.warehouses).values({ code, name: 'Committed' }));
        await tx.execute(sql`SELECT 1`);
      }),
    ).rejects.toMatchObject({ cause: { message: expect.stringContaining('after the COMMIT') } });
    expect(await warehouse(database.db, code)).toHaveLength(1);
    expect((await database.db.execute<{ n: number }>(sql`SELECT 3 AS n`)).rows).toEqual([{ n: 3 }]);
  });

  it('runs a last statement in a savepoint as any other, the outer transaction going on', async () => {
    const code = randomUUID();
    await database.db.transaction(async (tx) => {
      await tx.transaction((inner) => lastStatement(inner, () => inner.insert(schema.warehouses).values({ code, name: 'Nested' })));
      expect(await warehouse(tx, code)).toHaveLength(1);
    });
    expect(await warehouse(database.db, code)).toHaveLength(1);
  });

  it("applies a pushed scan in two writes: the begin, the settings, the lock, the read and the account's read together, then the write with the COMMIT", async () => {
    const { tour, actor: driver, scan } = await scanner(4701);
    const actor = { ...driver, accountUnread: true as const };
    // The first scan prepares the statements on the connection.
    await applyEvents(database.db, actor, [scan()]);
    const writes = countWrites(port);
    restore = writes.restore;
    const [result] = await applyEvents(database.db, actor, [scan()]);
    restore();
    expect(result.status).toBe('applied');
    expect(writes.counter.writes).toBe(2);
    for (const part of ['BEGIN', 'plan_cache_mode', 'engine_lock', 'engine_read', 'engine_active_accounts'])
      expect(writes.counter.texts[0]).toContain(part);
    expect(writes.counter.texts[1]).toContain('engine_write');
    expect(writes.counter.texts[1]).toContain('COMMIT');
    const [item] = await database.db
      .select()
      .from(schema.deliveryItems)
      .where(sql`${schema.deliveryItems.id} = ${tour.deliveries[0].items[0].id}`);
    expect(item.scannedQuantity).toBe(2);
  });

  it("plans the engine's statements and the live feed's page read once per connection, not on every call", async () => {
    const { actor: driver, scan } = await scanner(4702);
    const actor = { ...driver, accountUnread: true as const };
    for (let i = 0; i < 8; i++) {
      expect((await applyEvents(database.db, actor, [scan()]))[0].status).toBe('applied');
      const [page] = await readChangePages(database.db, [{ personalnummer: 4702, sinceSeq: undefined }], 100);
      expect(page).toMatchObject({ changes: expect.arrayContaining([expect.objectContaining({ entity: 'position' })]) });
    }
    const plans = await database.db.execute<{ name: string; generic_plans: string; custom_plans: string }>(
      sql`SELECT name, generic_plans::text, custom_plans::text FROM pg_prepared_statements WHERE name LIKE 'engine_%' OR name = 'change_pages'`,
    );
    const names = plans.rows.map((p) => p.name);
    for (const statement of ['engine_lock', 'engine_read', 'engine_active_accounts', 'engine_write', 'change_pages'])
      expect(names.some((n) => n.startsWith(statement))).toBe(true);
    // Left to itself, PostgreSQL plans each of the first five calls for their values (and these on every call).
    for (const plan of plans.rows) expect(plan).toMatchObject({ custom_plans: '0' });
  });
});

describe('a last statement on PGlite', () => {
  it('runs as any other, the transaction committing after it', async () => {
    const database = await openDatabase({});
    try {
      const code = randomUUID();
      const rows = await database.db.transaction(async (tx) => {
        await tx.insert(schema.warehouses).values({ code, name: 'First' });
        return lastStatement(tx, () => warehouse(tx, code));
      });
      expect(rows).toHaveLength(1);
      expect(await warehouse(database.db, code)).toHaveLength(1);
    } finally {
      await database.close();
    }
  });
});
