import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../server/db/client.js';
import * as schema from '../../server/db/schema.js';
import { createPostgresDatabase } from '../helpers/databases.js';

/** Counts what the process writes to the database's port: each write is a message batch of one round trip. */
function countWrites(port: number) {
  const original = { write: net.Socket.prototype._write, writev: net.Socket.prototype._writev! };
  const counter = { writes: 0 };
  const counted = <F extends (...args: never[]) => unknown>(write: F) =>
    function (this: net.Socket, ...args: Parameters<F>) {
      if (this.remotePort === port) counter.writes += 1;
      return write.apply(this, args);
    };
  net.Socket.prototype._write = counted(original.write);
  net.Socket.prototype._writev = counted(original.writev);
  return { counter, restore: () => Object.assign(net.Socket.prototype, { _write: original.write, _writev: original.writev }) };
}

/** SQLSTATE of `SELECT 1 / 0`. */
const DIVISION_BY_ZERO = '22012';

const txid = async (tx: Database['db']) => (await tx.execute<{ id: string }>(sql`SELECT txid_current()::text AS id`)).rows[0].id;

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
});
