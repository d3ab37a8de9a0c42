import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { migrationsFolder, type Db } from '../db/client.js';

let newestMigration: number | undefined;
/** The `when` of the newest migration this build ships (drizzle records it as `created_at`). */
function newestShippedMigration(): number {
  if (newestMigration === undefined) {
    const journal = JSON.parse(readFileSync(path.join(migrationsFolder, 'meta/_journal.json'), 'utf8')) as { entries: { when: number }[] };
    newestMigration = Math.max(...journal.entries.map((e) => e.when));
  }
  return newestMigration;
}

/** Whether the database has every migration this build ships (readiness). */
export async function migrationsApplied(db: Db): Promise<boolean> {
  const result = await db.execute<{ newest: string | null }>(sql`SELECT max(created_at)::text AS newest FROM drizzle.__drizzle_migrations`);
  return Number(result.rows[0]?.newest ?? 0) >= newestShippedMigration();
}

/** The newest seq in the change log (0 when empty). */
export async function changeLogHead(db: Db): Promise<number> {
  const result = await db.execute<{ head: string | null }>(sql`SELECT max(seq)::text AS head FROM change_log`);
  return Number(result.rows[0]?.head ?? 0);
}

/** Completions whose ERP write-back is not done, by status (`pending`, `failed`, `rejected`), over all instances. */
export async function erpWriteBackBacklog(db: Db): Promise<{ status: string; count: number }[]> {
  const result = await db.execute<{ status: string; count: string }>(sql`
    SELECT erp_push_status AS status, count(*)::text AS count FROM completions WHERE erp_push_status <> 'succeeded' GROUP BY 1`);
  return result.rows.map((r) => ({ status: r.status, count: Number(r.count) }));
}

/** Logged ERP import runs by result (`succeeded`, `failed`, `skipped`, `running`), over all instances. */
export async function importRunsByResult(db: Db): Promise<{ result: string; count: number }[]> {
  const result = await db.execute<{ result: string; count: string }>(sql`
    SELECT CASE WHEN finished_at IS NULL THEN 'running' WHEN success THEN 'succeeded'
                WHEN error LIKE 'Skipped:%' THEN 'skipped' ELSE 'failed' END AS result,
           count(*)::text AS count
    FROM erp_import_runs GROUP BY 1`);
  return result.rows.map((r) => ({ result: r.result, count: Number(r.count) }));
}
