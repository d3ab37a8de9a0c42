import { eq, sql } from 'drizzle-orm';
import { executePrepared, type Db } from '../db/client.js';
import { arrayLiteral } from '../db/jsonRows.js';
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
 * Which of these accounts may no longer connect: deactivated, or gone. An instance asks this for
 * every connected account once per heartbeat round, so the numbers go as one array parameter of a
 * prepared statement (a parameter per number held the event loop for tens of ms at 10,000), and
 * the answer names only the few to close rather than every account still active.
 */
export async function inactiveAccounts(db: Db, numbers: number[]): Promise<number[]> {
  if (numbers.length === 0) return [];
  const rows = await executePrepared<{ personalnummer: string }>(
    db,
    'inactive_accounts',
    () =>
      sql`SELECT n AS personalnummer FROM unnest(${sql.placeholder('numbers')}::${sql.raw(accounts.personalnummer.getSQLType())}[]) AS n
          WHERE NOT EXISTS (SELECT FROM ${accounts} WHERE ${accounts.personalnummer} = n AND ${accounts.active})`,
    { numbers: arrayLiteral(numbers) },
  );
  return rows.map((r) => Number(r.personalnummer));
}
