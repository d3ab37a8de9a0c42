import { sql } from 'drizzle-orm';
import { newId } from '../../../shared/ids.js';
import { bigint, customType, timestamp, uuid } from 'drizzle-orm/pg-core';

// Column kinds the tables share.
// Ids are made here, time-ordered (shared/ids.ts), so PGlite and PostgreSQL agree; the column default stays for rows written by hand.
export const id = () => uuid('id').primaryKey().defaultRandom().$defaultFn(newId);
export const createdAt = () => timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();
export const updatedAt = () => timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();
export const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
/**
 * When the statement that writes the row ran, not when its transaction began. Deviations and
 * review confirmations of a delivery are written under the delivery's row lock, so these times
 * order them as they happened; a transaction's start could predate a confirmation it commits after.
 */
export const writtenAt = (name: string) =>
  ts(name)
    .notNull()
    .default(sql`statement_timestamp()`);
export const personalnummer = (name: string) => bigint(name, { mode: 'number' });
// pg answers a Buffer, PGlite a Uint8Array.
export const bytea = customType<{ data: Buffer; driverData: Uint8Array }>({
  dataType: () => 'bytea',
  fromDriver: (value) => Buffer.from(value),
});
