/**
 * Indexes on tables that grow with every pushed event, built after the migrations. A migration
 * runs in a transaction, where CREATE INDEX holds off every write to its table while it builds
 * (docs/operations.md has the times at a year) and CREATE INDEX CONCURRENTLY is not allowed.
 * Built concurrently, the instances still running go on writing. A concurrent build that failed
 * half-way leaves an invalid index behind, which is dropped and built again. PGlite (one process,
 * a small database) builds them plainly.
 */
const lateIndexes = [
  // The follow-ups still to do (write-back or report) among every completion ever: what the write-back job polls.
  {
    name: 'completions_follow_up_idx',
    on: `completions (completed_at) WHERE erp_push_status <> 'succeeded' OR report_attachment_id IS NULL`,
  },
  // The few completed deliveries whose mail is open, among every completion ever (delivered-belegnummern).
  { name: 'deliveries_mail_open_idx', on: `deliveries (completed_at) WHERE state = 'completed' AND mail_sent_at IS NULL` },
  // The removals and their undoing among every scan ever: the review's changes, read from the index alone.
  { name: 'scan_audit_review_idx', on: `scan_audit (delivery_id, received_at) WHERE action IN ('remove', 'unremove')` },
  // The few lines removed or reduced among every line ever: the modified flag of the lists (adminShapes.ts), which
  // otherwise hashed a scan of all positions for a day's completed deliveries (measured in 3caf8da).
  { name: 'delivery_items_modified_idx', on: `delivery_items (delivery_id) WHERE state = 'Removed' OR credited_quantity > 0` },
  // The deliveries whose review waits (changed after their latest confirmation), oldest change first: the review's
  // candidates among every delivery that ever deviated (queries/adminReviews.ts).
  {
    name: 'deliveries_review_pending_idx',
    on: `deliveries (review_changed_at) WHERE review_changed_at > review_resolved_at OR (review_changed_at IS NOT NULL AND review_resolved_at IS NULL)`,
  },
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
