import { eq, sql } from 'drizzle-orm';
import { executePrepared, type Db } from '../db/client.js';
import { arrayLiteral, inPlaceholder } from '../db/jsonRows.js';
import { accounts } from '../db/schema.js';

/** An account's public shape, or undefined when there is none with that number. */
export async function readAccount(db: Db, personalnummer: number) {
  const [row] = await db
    .select({ personalnummer: accounts.personalnummer, name: accounts.name, active: accounts.active })
    .from(accounts)
    .where(eq(accounts.personalnummer, personalnummer));
  return row;
}

/**
 * Which of these accounts are active now (a missing account is not). The numbers go as one array
 * parameter of a prepared statement: an instance asks this for every connected account, and a
 * statement built with a parameter per number holds the event loop for tens of ms at 10,000.
 */
export async function activeAccounts(db: Db, numbers: number[]): Promise<Set<number>> {
  if (numbers.length === 0) return new Set();
  const rows = await executePrepared<{ personalnummer: string }>(
    db,
    'active_accounts',
    () =>
      sql`SELECT ${accounts.personalnummer} AS personalnummer FROM ${accounts} WHERE ${inPlaceholder(accounts.personalnummer, 'numbers')} AND ${accounts.active}`,
    { numbers: arrayLiteral(numbers) },
  );
  return new Set(rows.map((r) => Number(r.personalnummer)));
}
