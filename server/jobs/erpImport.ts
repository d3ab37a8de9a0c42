import { and, eq, gte, sql } from 'drizzle-orm';
import pg from 'pg';
import { addDays, berlinDate } from '../../shared/rules/calendar.js';
import type { ImportDetails, ImportSummary } from '../../shared/schemas/imports.js';
import type { AppContext } from '../context.js';
import { isDatabaseUnavailable } from '../db/availability.js';
import type { Db } from '../db/client.js';
import { erpImportRuns, paymentMethods } from '../db/schema.js';
import { recordChanges } from '../engine/changeLog.js';
import { emptyCounters, importRunOf } from '../shapes/importRuns.js';
import { toPaymentMethod } from '../shapes/masterData.js';
import { syncTour } from '../engine/tourSync/syncTour.js';
import { DomainError } from '../errors.js';
import { consistentDay } from '../integrations/erp/consistentDay.js';
import { demoPaymentMethods } from '../integrations/erp/demoData.js';
import { asJobRun } from '../observability/requestContext.js';

export type ImportTrigger = ImportSummary['trigger'];
export type ImportContext = Pick<AppContext, 'config' | 'database' | 'erp' | 'logger'>;

// Advisory lock key space of the ERP import; the second key is the target date as yyyymmdd.
export const IMPORT_LOCK = 7_230_100;

/** Dates being imported by this process, per database (PGlite has no other process to race with). */
const runningHere = new WeakMap<object, Set<string>>();

/** The day the scheduler and the start-up catch-up import: today in Berlin plus the configured offset. */
export const importTargetDate = (ctx: Pick<AppContext, 'config'>, now: Date) => addDays(berlinDate(now), ctx.config.erp.importOffsetDays);

/** Makes sure the payment methods the demo ERP's codes name exist (inserted once, never changed). */
export async function ensureDemoPaymentMethods(db: Db) {
  await db.transaction(async (tx) => {
    const inserted = await tx
      .insert(paymentMethods)
      .values([...demoPaymentMethods])
      .onConflictDoNothing({ target: paymentMethods.code })
      .returning();
    await recordChanges(
      tx,
      inserted.map(toPaymentMethod).map((m) => ({ entity: 'paymentMethod', op: 'upsert' as const, id: m.id, data: m })),
    );
  });
}

/**
 * Holds the import lock of one date for the duration of `work`: an in-process guard, and on
 * PostgreSQL a session advisory lock on a dedicated connection, so two instances on one database
 * never import the same date at once. Returns undefined when someone else holds it.
 */
async function withImportLock<T>(ctx: ImportContext, date: string, work: () => Promise<T>): Promise<T | undefined> {
  const running = runningHere.get(ctx.database) ?? new Set<string>();
  runningHere.set(ctx.database, running);
  if (running.has(date)) return undefined;
  running.add(date);
  let client: pg.Client | undefined;
  try {
    if (ctx.database.kind === 'postgres' && ctx.config.databaseDirectUrl) {
      client = new pg.Client({ connectionString: ctx.config.databaseDirectUrl, application_name: 'tourline import lock' });
      client.on('error', () => {
        /* the session ends; its lock goes with it */
      });
      await client.connect();
      const key = Number(date.replaceAll('-', ''));
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS locked', [IMPORT_LOCK, key]);
      if (!rows[0].locked) return undefined;
    }
    return await work();
  } finally {
    running.delete(date);
    // Ending the session releases its advisory lock.
    await client?.end().catch(() => undefined);
  }
}

const IMPORT_CONCURRENCY = 4;

/**
 * Imports every ERP tour of one day. Each run is logged in erp_import_runs (also when it fails
 * or is skipped because another instance imports the same date). Each tour is written in its own
 * transaction; a tour that fails does not stop the others, and the run is then unsuccessful.
 * A failing ERP read fails the run and throws `upstream_unavailable`.
 */
export function runImport(ctx: ImportContext, date: string, trigger: ImportTrigger): Promise<ImportSummary> {
  return asJobRun('erp-import', () => importDay(ctx, date, trigger));
}

async function importDay(ctx: ImportContext, date: string, trigger: ImportTrigger): Promise<ImportSummary> {
  const { db } = ctx.database;
  const [run] = await db.insert(erpImportRuns).values({ targetDate: date, trigger }).returning();
  const counters = { ...emptyCounters };
  const details: ImportDetails = { ignored_belegnummern: [], withdrawals_refused_belegnummern: [] };
  const finish = async (success: boolean, error: string | null, skipped = false) => {
    details.ignored_belegnummern.sort();
    details.withdrawals_refused_belegnummern.sort();
    const [done] = await db
      .update(erpImportRuns)
      .set({ finishedAt: new Date(), success, skipped, counters, details, error })
      .where(eq(erpImportRuns.id, run.id))
      .returning();
    const summary = { ...importRunOf(done), finished_at: done.finishedAt!.toISOString() };
    ctx.logger[success ? 'info' : 'warn'](
      { import: summary },
      `ERP import of ${date} (${trigger}) ${skipped ? 'skipped' : success ? 'succeeded' : 'failed'}`,
    );
    return summary;
  };

  try {
    const result = await withImportLock(ctx, date, async () => {
      if (ctx.config.erp.mode === 'demo') await ensureDemoPaymentMethods(db);
      const day = await ctx.erp.fetchTours(date);
      const { tours, conflicts } = consistentDay(day.tours);
      if (conflicts.length) ctx.logger.warn({ tourDate: date, conflicts }, "ERP import: the day's answer contradicts itself; evened out");
      if (day.refused.length) ctx.logger.error({ tourDate: date, refused: day.refused }, 'ERP import: tours refused');
      const failures = [...day.refused];
      // Tours of different drivers share little but master data, written in key order, so a few
      // go at once: while one waits for the database, another is being prepared.
      let next = 0;
      const worker = async () => {
        while (next < tours.length) {
          const tour = tours[next++];
          try {
            const synced = await syncTour(db, tour);
            counters.tours += 1;
            counters.tours_created += synced.created ? 1 : 0;
            counters.deliveries_created += synced.deliveries.created;
            counters.deliveries_updated += synced.deliveries.updated;
            counters.deliveries_unchanged += synced.deliveries.unchanged;
            counters.deliveries_moved += synced.deliveries.moved;
            counters.deliveries_withdrawn += synced.deliveries.withdrawn;
            counters.withdrawals_refused += synced.deliveries.withdrawalsRefused.length;
            counters.changes_ignored += synced.deliveries.changesIgnored.length;
            details.withdrawals_refused_belegnummern.push(...synced.deliveries.withdrawalsRefused);
            details.ignored_belegnummern.push(...synced.deliveries.changesIgnored);
            counters.positions_created += synced.positions.created;
            counters.positions_updated += synced.positions.updated;
            counters.positions_deleted += synced.positions.deleted;
          } catch (error) {
            // The whole run is tried again later; the other tours would fail alike.
            if (isDatabaseUnavailable(error)) throw error;
            ctx.logger.error(
              { err: error, driver: tour.driver.personalnummer, tourDate: tour.tourDate },
              'ERP import: a tour could not be written',
            );
            failures.push(`tour of driver ${tour.driver.personalnummer} on ${tour.tourDate}: ${(error as Error).message}`);
          }
        }
      };
      await Promise.all(Array.from({ length: IMPORT_CONCURRENCY }, worker));
      return failures;
    });
    if (result === undefined) return await finish(false, 'Skipped: an import of this date is already running', true);
    return await finish(result.length === 0, result.length ? result.join('; ') : null);
  } catch (error) {
    if (isDatabaseUnavailable(error)) {
      await finish(false, 'The database was unavailable').catch(() => undefined);
      throw error;
    }
    await finish(false, (error as Error).message);
    if (error instanceof DomainError) throw error;
    throw new DomainError('internal', `ERP import of ${date} failed`);
  }
}

/** Whether a successful import of the date is logged (one that started at `since` or later, when given). */
export async function hasSuccessfulImport(db: Db, date: string, since?: Date): Promise<boolean> {
  const [row] = await db
    .select({ one: sql`1` })
    .from(erpImportRuns)
    .where(
      and(eq(erpImportRuns.targetDate, date), eq(erpImportRuns.success, true), since ? gte(erpImportRuns.startedAt, since) : undefined),
    )
    .limit(1);
  return !!row;
}
