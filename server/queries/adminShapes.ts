import { sql, type AnyColumn, type SQL } from 'drizzle-orm';
import type { Address } from '../../shared/schemas/common.js';

/**
 * The back office speaks snake_case. Rather than a second set of row mappers, admin answers
 * take the public shapes of `shapes.ts` and rename their keys.
 */

type SnakeCase<S extends string> = S extends `${infer Head}${infer Tail}`
  ? `${Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`}${SnakeCase<Tail>}`
  : S;

export type SnakeKeys<T> = T extends readonly (infer U)[]
  ? SnakeKeys<U>[]
  : T extends object
    ? { [K in keyof T as K extends string ? SnakeCase<K> : K]: SnakeKeys<T[K]> }
    : T;

const snakeCase = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Renames the keys of plain JSON data (objects, arrays, primitives) to snake_case, deeply. */
export function snakeKeys<T>(value: T): SnakeKeys<T> {
  if (Array.isArray(value)) return value.map(snakeKeys) as SnakeKeys<T>;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [snakeCase(k), snakeKeys(v)])) as SnakeKeys<T>;
  }
  return value as SnakeKeys<T>;
}

/** Addresses stored before `addition` existed lack the key; the admin shape always has it. */
export const adminAddress = (address: Address) => snakeKeys({ ...address, addition: address.addition ?? null });

export const iso = (date: Date) => date.toISOString();
export const isoOrNull = (date: Date | null) => (date ? date.toISOString() : null);

/**
 * Microseconds since the epoch: review times are compared at PostgreSQL's precision (a
 * JavaScript Date would round a change and a confirmation in the same millisecond together).
 */
export const micros = (instant: AnyColumn | SQL) => sql<number>`(extract(epoch from ${instant}) * 1000000)::bigint`.mapWith(Number);

/** Exact to the microsecond, whatever the session's time zone, and read back as the same instant (a cursor's sort key). */
export const isoMicros = (instant: AnyColumn | SQL) => sql<string>`to_char(${instant} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
