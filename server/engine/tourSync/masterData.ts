import { inArray } from 'drizzle-orm';
import type { SyncTourRequest } from '../../../shared/schemas/tours.js';
import type { Db } from '../../db/client.js';
import { articles, customers, paymentMethods, warehouses } from '../../db/schema.js';
import type { ArticleRow, CustomerRow, WarehouseRow } from '../../shapes/rows.js';
import { byKey, upsertChanged, whenChanged, type Upserted } from './upserts.js';

// The columns each upsert mirrors from the ERP; anything else on the row is the driver's or the server's.
const warehouseMirror = [warehouses.name];
const articleMirror = [articles.name, articles.scannable, articles.defaultWarehouseId];
const customerMirror = [customers.name, customers.address];

/** The ERP's master data of one tour as stored after the sync, and what the sync changed of it. */
export interface MasterData {
  warehouses: Upserted<WarehouseRow, string>;
  articles: Upserted<ArticleRow, string>;
  customers: Upserted<CustomerRow, number>;
  warehouseId: Map<string, string>;
  articleByNumber: Map<string, ArticleRow>;
  articleById: Map<string, ArticleRow>;
  customerId: Map<number, string>;
  /** Payment method ids by code; an unknown code has none (the delivery keeps the code). */
  methodId: Map<string, string>;
}

/** Mirrors the warehouses, articles and customers a tour names, and resolves its payment codes. */
export async function mirrorMasterData(tx: Db, request: SyncTourRequest): Promise<MasterData> {
  const positionsIn = request.deliveries.flatMap((d) => d.positions);
  const warehouseInput = byKey(
    [...positionsIn.map((p) => p.article.defaultWarehouse), ...positionsIn.map((p) => p.warehouse)].filter((w) => !!w),
    (w) => w.code,
  );
  const warehouseRows = await upsertChanged(
    warehouseInput,
    (w) => w.code,
    warehouseMirror,
    (codes) => tx.select().from(warehouses).where(inArray(warehouses.code, codes)),
    (chunk) =>
      tx
        .insert(warehouses)
        .values(chunk)
        .onConflictDoUpdate({ target: warehouses.code, ...whenChanged(warehouseMirror) })
        .returning(),
  );
  const warehouseId = new Map(warehouseRows.rows.map((w) => [w.code, w.id]));

  const articleInput = byKey(
    positionsIn.map((p) => p.article),
    (a) => a.articleNumber,
  ).map((a) => ({
    articleNumber: a.articleNumber,
    name: a.name,
    scannable: a.scannable,
    defaultWarehouseId: a.defaultWarehouse ? warehouseId.get(a.defaultWarehouse.code)! : null,
  }));
  const articleRows = await upsertChanged(
    articleInput,
    (a) => a.articleNumber,
    articleMirror,
    (numbers) => tx.select().from(articles).where(inArray(articles.articleNumber, numbers)),
    (chunk) =>
      tx
        .insert(articles)
        .values(chunk)
        .onConflictDoUpdate({
          target: articles.articleNumber,
          ...whenChanged(articleMirror),
        })
        .returning(),
  );

  const customerInput = byKey(
    request.deliveries.map((d) => d.customer),
    (c) => c.erpCustomerId,
  );
  const customerRows = await upsertChanged(
    customerInput,
    (c) => c.erpCustomerId,
    customerMirror,
    (ids) => tx.select().from(customers).where(inArray(customers.erpCustomerId, ids)),
    (chunk) =>
      tx
        .insert(customers)
        .values(chunk)
        .onConflictDoUpdate({ target: customers.erpCustomerId, ...whenChanged(customerMirror) })
        .returning(),
  );

  const codes = [...new Set(request.deliveries.map((d) => d.paymentMethodCode).filter((c): c is string => !!c))];
  const methodRows = codes.length
    ? await tx.select({ id: paymentMethods.id, code: paymentMethods.code }).from(paymentMethods).where(inArray(paymentMethods.code, codes))
    : [];

  return {
    warehouses: warehouseRows,
    articles: articleRows,
    customers: customerRows,
    warehouseId,
    articleByNumber: new Map(articleRows.rows.map((a) => [a.articleNumber, a])),
    articleById: new Map(articleRows.rows.map((a) => [a.id, a])),
    customerId: new Map(customerRows.rows.map((c) => [c.erpCustomerId, c.id])),
    methodId: new Map(methodRows.map((m) => [m.code, m.id])),
  };
}
