import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { is, sql } from 'drizzle-orm';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executePrepared, migrationsFolder, openDatabase, type Database, type DatabaseOptions, type Db } from '../../server/db/client.js';
import { constraintViolation } from '../../server/db/errors.js';
import { arrayLiteral, inList, inPlaceholder } from '../../server/db/jsonRows.js';
import * as schema from '../../server/db/schema.js';
import { createPostgresDatabase, databaseKinds } from '../helpers/databases.js';

const address = { street: 'Hauptstraße', houseNumber: '1', postalCode: '10115', city: 'Berlin', country: 'DE', addition: null };

async function rows<T>(db: Db, query: ReturnType<typeof sql>): Promise<T[]> {
  return (await db.execute(query)).rows as T[];
}

/** Everything migrations decide: columns, indexes, constraints and the applied migrations. */
async function schemaSnapshot(db: Db) {
  return {
    columns: await rows(
      db,
      sql`SELECT table_name, column_name, data_type, is_nullable, column_default
      FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
    ),
    indexes: await rows(db, sql`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname`),
    constraints: await rows(
      db,
      sql`SELECT table_name, constraint_name, constraint_type
      FROM information_schema.table_constraints WHERE table_schema = 'public' ORDER BY table_name, constraint_name`,
    ),
    migrations: await rows(db, sql`SELECT hash, created_at FROM drizzle.__drizzle_migrations ORDER BY id`),
  };
}

/** The PostgreSQL error code (`23505` unique, `23503` foreign key, `23514` check) behind a failed insert. */
function sqlState(error: unknown): string | undefined {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.code === 'string' && /^\d{2}[0-9A-Z]{3}$/.test(e.code)) return e.code;
  }
  return undefined;
}

async function failure(insert: Promise<unknown>): Promise<unknown> {
  try {
    await insert;
  } catch (error) {
    return error;
  }
  throw new Error('the insert was accepted');
}

describe.each(databaseKinds)('migrations and constraints on %s', (kind) => {
  let options: DatabaseOptions;
  let database: Database;
  let dataDir: string | undefined;
  const db = () => database.db;

  beforeAll(async () => {
    if (kind === 'postgres') options = { url: await createPostgresDatabase() };
    else {
      dataDir = mkdtempSync(path.join(os.tmpdir(), 'tourline-db-'));
      options = { dataDir };
    }
    database = await openDatabase(options);
  });
  afterAll(async () => {
    await database?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  describe('migrations', () => {
    it('applies every migration of the journal once', async () => {
      const journal = JSON.parse(readFileSync(path.join(migrationsFolder, 'meta/_journal.json'), 'utf8')) as { entries: unknown[] };
      expect((await schemaSnapshot(db())).migrations).toHaveLength(journal.entries.length);
    });

    it('changes nothing when the database is opened and migrated a second time', async () => {
      const before = await schemaSnapshot(db());
      const epoch = database.epoch;
      await database.close();
      database = await openDatabase(options);
      expect(await schemaSnapshot(db())).toEqual(before);
      expect(database.epoch).toBe(epoch);
    });

    it('has a column in the database for every column of the drizzle schema', async () => {
      const present = new Set(
        (await schemaSnapshot(db())).columns.map((c) => {
          const column = c as { table_name: string; column_name: string };
          return `${column.table_name}.${column.column_name}`;
        }),
      );
      const tables = (Object.values(schema) as unknown[]).filter((value): value is PgTable => is(value, PgTable));
      expect(tables.length).toBeGreaterThan(10);
      const missing = tables.flatMap((table) => {
        const config = getTableConfig(table);
        return config.columns.map((column) => `${config.name}.${column.name}`).filter((name) => !present.has(name));
      });
      expect(missing, 'schema.ts changed without a generated migration').toEqual([]);
    });
  });

  describe('constraints', () => {
    let account: number;
    let deliveryId: string;
    let itemId: string;
    let paymentMethodId: string;

    beforeAll(async () => {
      account = 5000 + Math.floor(Math.random() * 1000);
      await db().insert(schema.accounts).values({ personalnummer: account, name: 'Constraint Fahrer' });
      const [tour] = await db().insert(schema.tours).values({ accountId: account, tourDate: '2030-01-02' }).returning();
      const [customer] = await db().insert(schema.customers).values({ erpCustomerId: 77, name: 'Kunde', address }).returning();
      const [delivery] = await db()
        .insert(schema.deliveries)
        .values({
          tourId: tour.id,
          belegartId: 1,
          belegnummer: 'B-1',
          customerId: customer.id,
          deliveryAddress: address,
          sortOrder: 1,
        })
        .returning();
      deliveryId = delivery.id;
      const [article] = await db().insert(schema.articles).values({ articleNumber: 'A-1', name: 'Artikel', scannable: true }).returning();
      const [item] = await db()
        .insert(schema.deliveryItems)
        .values({ deliveryId, lineNumber: 1, articleId: article.id, requiredQuantity: 2 })
        .returning();
      itemId = item.id;
      const [method] = await db().insert(schema.paymentMethods).values({ code: 'BAR', name: 'Bar' }).returning();
      paymentMethodId = method.id;
    });

    const occurredAt = new Date('2030-01-02T08:00:00Z');
    /** A scan of the test's line, with `changes`. */
    const insertScan = (changes: Partial<typeof schema.scanAudit.$inferInsert>) =>
      db()
        .insert(schema.scanAudit)
        .values({
          clientScanId: randomUUID(),
          deliveryId,
          deliveryItemId: itemId,
          action: 'scan',
          scannedQuantityAfter: 1,
          creditedQuantityAfter: 0,
          stateAfter: 'InProgress',
          accountId: account,
          occurredAt,
          ...changes,
        });

    it.each<[string, string, (id: string) => Promise<unknown>]>([
      [
        'a plate key',
        'cars_plate_key_uq',
        (key) => db().insert(schema.cars).values({ accountId: account, plate: key, plateKey: key.toLowerCase() }),
      ],
      ['a payment method code', 'payment_methods_code_uq', (code) => db().insert(schema.paymentMethods).values({ code, name: 'Methode' })],
      ['a service key', 'services_key_uq', (key) => db().insert(schema.services).values({ key, name: 'Service', kind: 'boolean' })],
      [
        'a delivery (belegart_id, belegnummer)',
        'deliveries_beleg_uq',
        async (belegnummer) => {
          const [tour] = await db()
            .select()
            .from(schema.tours)
            .where(sql`${schema.tours.accountId} = ${account}`);
          const [customer] = await db().select().from(schema.customers);
          return db().insert(schema.deliveries).values({
            tourId: tour.id,
            belegartId: 3,
            belegnummer,
            customerId: customer.id,
            deliveryAddress: address,
            sortOrder: 2,
          });
        },
      ],
      [
        'a processed event id',
        'processed_events_pkey',
        (eventId) => db().insert(schema.processedEvents).values({ eventId, type: 'scan', accountId: account }),
      ],
      ['a scan audit client_scan_id', 'scan_audit_client_scan_uq', (clientScanId) => insertScan({ clientScanId })],
      [
        'a credit event client_event_id',
        'credit_events_client_uq',
        (clientEventId) =>
          db().insert(schema.creditEvents).values({
            clientEventId,
            deliveryId,
            action: 'set',
            amountCents: 1000,
            reason: 'Kulanz',
            accountId: account,
            occurredAt,
          }),
      ],
      [
        'a payment protocol client_event_id',
        'payment_protocol_client_uq',
        (clientEventId) =>
          db().insert(schema.paymentProtocol).values({
            clientEventId,
            deliveryId,
            paymentMethodId,
            paymentMethodCode: 'BAR',
            amountCents: 500,
            accountId: account,
            occurredAt,
          }),
      ],
      [
        'a tour per account and date',
        'tours_account_date_uq',
        () => db().insert(schema.tours).values({ accountId: account, tourDate: '2031-01-01' }),
      ],
      [
        'a delivery line number',
        'delivery_items_line_uq',
        async () => {
          const [article] = await db().select().from(schema.articles);
          return db().insert(schema.deliveryItems).values({ deliveryId, lineNumber: 2, articleId: article.id, requiredQuantity: 1 });
        },
      ],
      [
        'an ERP customer id',
        'customers_erp_id_uq',
        () => db().insert(schema.customers).values({ erpCustomerId: 78, name: 'Kunde', address }),
      ],
      [
        'an article number',
        'articles_number_uq',
        (articleNumber) => db().insert(schema.articles).values({ articleNumber, name: 'Artikel', scannable: false }),
      ],
      ['a warehouse code', 'warehouses_code_uq', (code) => db().insert(schema.warehouses).values({ code, name: 'Lager' })],
    ])('refuses a duplicate of %s (%s)', async (_what, constraint, insert) => {
      const id = randomUUID();
      await insert(id);
      const error = await failure(insert(id));
      expect(constraintViolation(error)).toEqual({ kind: 'unique', constraint });
    });

    it.each<[string, () => Promise<unknown>]>([
      ['a car of an unknown account', () => db().insert(schema.cars).values({ accountId: 1, plate: 'X', plateKey: randomUUID() })],
      ['a scan of an unknown line', () => insertScan({ deliveryItemId: randomUUID() })],
      [
        'a payment with an unknown method',
        () =>
          db().insert(schema.paymentProtocol).values({
            clientEventId: randomUUID(),
            deliveryId,
            paymentMethodId: randomUUID(),
            paymentMethodCode: 'X',
            amountCents: 1,
            accountId: account,
            occurredAt,
          }),
      ],
      [
        'a service value of an unknown delivery',
        async () => {
          const [service] = await db().insert(schema.services).values({ key: randomUUID(), name: 'S', kind: 'boolean' }).returning();
          return db().insert(schema.deliveryServiceValues).values({ deliveryId: randomUUID(), serviceId: service.id, boolValue: true });
        },
      ],
    ])('refuses %s by a foreign key', async (_what, insert) => {
      expect(constraintViolation(await failure(insert()))?.kind).toBe('foreign_key');
    });

    const twoWarehouses = () =>
      db()
        .insert(schema.warehouses)
        .values([
          { code: randomUUID(), name: 'A' },
          { code: randomUUID(), name: 'B' },
        ])
        .returning();

    it('finds rows by a list of values sent as one array parameter, repeats, numbers and no values included', async () => {
      const [a, b] = await twoWarehouses();
      const found = await db()
        .select({ id: schema.warehouses.id })
        .from(schema.warehouses)
        .where(inList(schema.warehouses.id, [a.id, randomUUID(), a.id, b.id]));
      expect(found.map((r) => r.id).sort()).toEqual([a.id, b.id].sort());
      const personalnummer = 7_700_000 + Math.floor(Math.random() * 1000);
      await db().insert(schema.accounts).values({ personalnummer, name: 'Liste' });
      const accounts = await db()
        .select({ n: schema.accounts.personalnummer })
        .from(schema.accounts)
        .where(inList(schema.accounts.personalnummer, [personalnummer, personalnummer + 1]));
      expect(accounts).toEqual([{ n: personalnummer }]);
      expect(await db().select().from(schema.accounts).where(inList(schema.accounts.personalnummer, []))).toEqual([]);
    });

    it('finds text values that array syntax would otherwise read as quotes, separators or NULL', async () => {
      const tag = randomUUID().slice(0, 8);
      const codes = [`${tag} "quoted"`, `${tag} back\\slash\\`, `${tag} {a,b}`, 'NULL', `${tag} 'single'`];
      await db()
        .insert(schema.warehouses)
        .values(codes.map((code) => ({ code, name: 'W' })));
      const found = await db()
        .select({ code: schema.warehouses.code })
        .from(schema.warehouses)
        .where(inList(schema.warehouses.code, [...codes, `${tag} other`]));
      expect(found.map((r) => r.code).sort()).toEqual([...codes].sort());
    });

    it("builds a prepared statement once and binds each call's values; refuses one with a value built into its text", async () => {
      const [a, b] = await twoWarehouses();
      let builds = 0;
      const codesOf = (ids: string[]) =>
        executePrepared<{ code: string }>(
          db(),
          `test_warehouse_codes_${kind}`,
          () => {
            builds += 1;
            return sql`SELECT ${schema.warehouses.code} AS code FROM ${schema.warehouses} WHERE ${inPlaceholder(schema.warehouses.id, 'ids')} ORDER BY 1`;
          },
          { ids: arrayLiteral(ids) },
        );
      expect(await codesOf([a.id])).toEqual([{ code: a.code }]);
      expect(await codesOf([b.id, a.id])).toEqual([a, b].map((w) => ({ code: w.code })).sort((x, y) => x.code.localeCompare(y.code)));
      expect(await codesOf([])).toEqual([]);
      expect(builds).toBe(1);
      await expect(executePrepared(db(), 'test_value_in_text', () => sql`SELECT ${a.id}::uuid AS id`)).rejects.toThrow(/not a placeholder/);
    });

    it('refuses a deletion of a payment method that a delivery references', async () => {
      const [method] = await db().insert(schema.paymentMethods).values({ code: randomUUID(), name: 'Rechnung' }).returning();
      await db()
        .update(schema.deliveries)
        .set({ paymentMethodId: method.id })
        .where(sql`${schema.deliveries.id} = ${deliveryId}`);
      const error = await failure(
        db()
          .delete(schema.paymentMethods)
          .where(sql`${schema.paymentMethods.id} = ${method.id}`),
      );
      expect(constraintViolation(error)?.kind).toBe('foreign_key');
    });

    it.each<[string, () => Promise<unknown>]>([
      [
        'a service whose minValue exceeds its maxValue',
        () =>
          db().insert(schema.services).values({
            key: randomUUID(),
            name: 'Zähler',
            kind: 'numeric',
            minValue: 5,
            maxValue: 1,
          }),
      ],
      [
        'a negative scanned quantity',
        () =>
          db()
            .update(schema.deliveryItems)
            .set({ scannedQuantity: -1 })
            .where(sql`${schema.deliveryItems.id} = ${itemId}`),
      ],
      [
        'a line without required quantity',
        async () => {
          const [article] = await db().select().from(schema.articles);
          return db().insert(schema.deliveryItems).values({ deliveryId, lineNumber: 99_999, articleId: article.id, requiredQuantity: 0 });
        },
      ],
    ])('refuses %s by a check constraint', async (_what, write) => {
      expect(sqlState(await failure(write()))).toBe('23514');
    });
  });
});
