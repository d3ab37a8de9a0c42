import type { ErpWriteBack, ImportCounters, ImportRun } from '../../shared/schemas/imports.js';
import { cancellationIdempotencyKey, completionIdempotencyKey } from '../integrations/erp/gateway.js';
import type { erpImportRuns } from '../db/schema.js';

export const emptyCounters: ImportCounters = {
  tours: 0,
  tours_created: 0,
  deliveries_created: 0,
  deliveries_updated: 0,
  deliveries_unchanged: 0,
  deliveries_moved: 0,
  deliveries_withdrawn: 0,
  withdrawals_refused: 0,
  changes_ignored: 0,
  positions_created: 0,
  positions_updated: 0,
  positions_deleted: 0,
};

type RunRow = typeof erpImportRuns.$inferSelect;

/** A logged run as the back office reads it; runs logged before a counter existed show it as 0. */
export function importRunOf(run: RunRow): ImportRun {
  return {
    run_id: run.id,
    target_date: run.targetDate,
    trigger: run.trigger,
    success: run.success,
    skipped: run.skipped,
    started_at: run.startedAt.toISOString(),
    finished_at: run.finishedAt?.toISOString() ?? null,
    ...emptyCounters,
    ...run.counters,
    ignored_belegnummern: run.details.ignored_belegnummern ?? [],
    withdrawals_refused_belegnummern: run.details.withdrawals_refused_belegnummern ?? [],
    error: run.error,
  };
}

/** A row of the write-back list as the database answers it (both drivers: timestamps may come as text). */
export interface ErpWriteBackRow extends Record<string, unknown> {
  kind: ErpWriteBack['kind'];
  delivery_id: string;
  key: string;
  belegart_id: number;
  belegnummer: string;
  recorded_at: Date | string;
  status: ErpWriteBack['status'];
  attempts: number;
  pushed_at: Date | string | null;
  error: string | null;
  next_attempt_at: Date | string | null;
}

const isoOf = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());

export function erpWriteBackOf(row: ErpWriteBackRow): ErpWriteBack {
  return {
    kind: row.kind,
    delivery_id: row.delivery_id,
    belegart_id: row.belegart_id,
    belegnummer: row.belegnummer,
    idempotency_key: (row.kind === 'completion' ? completionIdempotencyKey : cancellationIdempotencyKey)(row.delivery_id),
    recorded_at: isoOf(row.recorded_at)!,
    status: row.status,
    attempts: row.attempts,
    pushed_at: isoOf(row.pushed_at),
    error: row.error,
    next_attempt_at: isoOf(row.next_attempt_at),
  };
}
