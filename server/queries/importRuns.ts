import { and, desc, eq, sql, type SQL } from 'drizzle-orm';
import type { ImportRun } from '../../shared/schemas/imports.js';
import type { Db } from '../db/client.js';
import { erpImportRuns } from '../db/schema.js';
import { importRunOf } from '../shapes/importRuns.js';
import { isoMicros } from './adminShapes.js';
import { cutPage, type Page, type PageRequest } from './page.js';

/** A run's place in the list, newest first: its start (ISO, to the microsecond) and its id. */
export type ImportRunKey = [startedAt: string, id: string];

const startedKey = isoMicros(erpImportRuns.startedAt);

function before([at, id]: ImportRunKey): SQL {
  return sql`(${erpImportRuns.startedAt}, ${erpImportRuns.id}) < (${at}::timestamptz, ${id}::uuid)`;
}

/** The logged import runs, newest first, of one tour date or of all; a page of them when asked. */
export async function importRuns(db: Db, date: string | null, page?: PageRequest<ImportRunKey>): Promise<Page<ImportRun, ImportRunKey>> {
  const query = db
    .select({ run: erpImportRuns, key: startedKey })
    .from(erpImportRuns)
    .where(and(date ? eq(erpImportRuns.targetDate, date) : undefined, page?.after ? before(page.after) : undefined))
    .orderBy(desc(erpImportRuns.startedAt), desc(erpImportRuns.id));
  const rows = page ? await query.limit(page.limit + 1) : await query;
  return cutPage(
    rows,
    page?.limit ?? rows.length,
    (r): ImportRunKey => [r.key, r.run.id],
    (r) => importRunOf(r.run),
  );
}
