import { and, eq, inArray } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { accounts } from '../db/schema.js';

/** An account's public shape, or undefined when there is none with that number. */
export async function readAccount(db: Db, personalnummer: number) {
  const [row] = await db
    .select({ personalnummer: accounts.personalnummer, name: accounts.name, active: accounts.active })
    .from(accounts)
    .where(eq(accounts.personalnummer, personalnummer));
  return row;
}

/** Which of these accounts are active now (a missing account is not). */
export async function activeAccounts(db: Db, numbers: number[]): Promise<Set<number>> {
  if (numbers.length === 0) return new Set();
  const rows = await db
    .select({ personalnummer: accounts.personalnummer })
    .from(accounts)
    .where(and(inArray(accounts.personalnummer, numbers), eq(accounts.active, true)));
  return new Set(rows.map((r) => r.personalnummer));
}
