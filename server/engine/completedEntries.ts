import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { entryHeadSql } from '../db/deliverySql.js';
import { deliveries } from '../db/schema.js';

/**
 * Keeps the entry's start on the completed deliveries `where` selects, in the completion's
 * transaction: the list then reads a day's entries instead of building each from the delivery,
 * its tour and its lines (docs/benchmarks.md, "A year of history").
 */
export async function keepCompletedEntryHead(tx: Db, where: SQL): Promise<void> {
  await tx.execute(
    sql`UPDATE ${deliveries} SET completed_entry_head = ${entryHeadSql} WHERE ${deliveries.state} = 'completed' AND ${where}`,
  );
}
