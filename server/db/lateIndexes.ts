/**
 * Indexes on tables that grow with every pushed event, built after the migrations. A migration
 * runs in a transaction, where CREATE INDEX holds off every write to its table while it builds
 * (docs/operations.md has the times at a year) and CREATE INDEX CONCURRENTLY is not allowed.
 * Built concurrently, the instances still running go on writing. A concurrent build that failed
 * half-way leaves an invalid index behind, which is dropped and built again. PGlite (one process,
 * a small database) builds them plainly.
 */
const lateIndexes = [
  // The retention's oldest events first (jobs/eventRetention.ts).
  { name: 'processed_events_received_idx', on: 'processed_events (received_at)' },
];

type Run = (text: string, values?: unknown[]) => Promise<{ rows: unknown[] }>;

/** `run` must not be inside a transaction; on PostgreSQL the caller holds the migration lock, so instances build one at a time. */
export async function buildLateIndexes(run: Run, concurrently: boolean): Promise<void> {
  const how = concurrently ? 'CONCURRENTLY ' : '';
  for (const index of lateIndexes) {
    const { rows } = await run('SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = to_regclass($1)', [index.name]);
    const state = rows[0] as { valid: boolean } | undefined;
    if (state?.valid) continue;
    if (state) await run(`DROP INDEX ${how}IF EXISTS ${index.name}`);
    await run(`CREATE INDEX ${how}IF NOT EXISTS ${index.name} ON ${index.on}`);
  }
}
