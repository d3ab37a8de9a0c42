import { sql } from 'drizzle-orm';
import { boolean, check, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import type { Address } from '../../../shared/schemas/common.js';
import { id, createdAt, updatedAt, personalnummer } from './columns.js';

// ---------- accounts and master data maintained through the API ----------

export const accounts = pgTable('accounts', {
  personalnummer: personalnummer('personalnummer').primaryKey(),
  name: text('name').notNull(),
  active: boolean('active').notNull().default(true),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
});

export const cars = pgTable(
  'cars',
  {
    id: id(),
    accountId: personalnummer('account_id')
      .notNull()
      .references(() => accounts.personalnummer),
    plate: text('plate').notNull(),
    // Plates are unique after trimming and case folding; the key carries that normal form.
    plateKey: text('plate_key').notNull(),
    active: boolean('active').notNull().default(true),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex('cars_plate_key_uq').on(t.plateKey), index('cars_account_idx').on(t.accountId)],
);

export const paymentMethods = pgTable(
  'payment_methods',
  {
    id: id(),
    code: text('code').notNull(),
    name: text('name').notNull(),
    collectOnSite: boolean('collect_on_site').notNull().default(false),
    active: boolean('active').notNull().default(true),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex('payment_methods_code_uq').on(t.code)],
);

export const services = pgTable(
  'services',
  {
    id: id(),
    key: text('key').notNull(),
    name: text('name').notNull(),
    kind: text('kind', { enum: ['boolean', 'numeric'] }).notNull(),
    minValue: integer('min_value'),
    maxValue: integer('max_value'),
    sortOrder: integer('sort_order'),
    active: boolean('active').notNull().default(true),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('services_key_uq').on(t.key),
    check('services_limits_ck', sql`${t.minValue} IS NULL OR ${t.maxValue} IS NULL OR ${t.minValue} <= ${t.maxValue}`),
  ],
);

// ---------- ERP mirror data ----------

export const customers = pgTable(
  'customers',
  {
    id: id(),
    erpCustomerId: personalnummer('erp_customer_id').notNull(),
    name: text('name').notNull(),
    address: jsonb('address').$type<Address>().notNull(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex('customers_erp_id_uq').on(t.erpCustomerId)],
);

export const warehouses = pgTable(
  'warehouses',
  {
    id: id(),
    code: text('code').notNull(),
    name: text('name').notNull(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex('warehouses_code_uq').on(t.code)],
);

export const articles = pgTable(
  'articles',
  {
    id: id(),
    articleNumber: text('article_number').notNull(),
    name: text('name').notNull(),
    scannable: boolean('scannable').notNull(),
    defaultWarehouseId: uuid('default_warehouse_id').references(() => warehouses.id),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex('articles_number_uq').on(t.articleNumber), index('articles_default_warehouse_idx').on(t.defaultWarehouseId)],
);
