import schedule from 'node-schedule';
import { berlinDate } from '../../shared/rules/calendar.js';
import { isDatabaseUnavailable } from '../db/availability.js';
import { createBackgroundWork } from './background.js';
import {
  ensureDemoPaymentMethods,
  hasSuccessfulImport,
  importTargetDate,
  runImport,
  type ImportContext,
  type ImportTrigger,
} from './erpImport.js';

export interface ImportJobs {
  /** Settles when the start-up catch-up is done, its retries included (it never rejects; failures are logged and in the run log). */
  catchUp: Promise<void>;
  /** When the scheduler fires next. */
  nextRun(): Date | null;
  /** Cancels the schedule and the retries, and waits for a running import to finish. */
  stop(): Promise<void>;
}

export interface ImportJobOptions {
  now?: () => Date;
  /** The wait before the first retry of a failed run (default ERP_IMPORT_RETRY_FIRST_MS; tests shorten it). */
  retryMs?: number;
}

/** The wait before retry n (1-based): doubling from the first, never longer than the most. */
export const importRetryDelayMs = (retry: number, firstMs: number, maxMs: number) => Math.min(maxMs, firstMs * 2 ** (retry - 1));

/**
 * The scheduled ERP import (ERP_IMPORT_CRON in Europe/Berlin, target today + ERP_IMPORT_OFFSET_DAYS)
 * and the start-up catch-up: the target date is imported when no successful run is logged for
 * it; in demo mode today as well, so a fresh start shows today's tours. A failed run (the ERP or
 * the database down, a tour refused) is tried again with backoff until one succeeds, another
 * instance's succeeds, or the next scheduled run takes over.
 */
export function startImportJobs(ctx: ImportContext, options: ImportJobOptions = {}): ImportJobs {
  const now = options.now ?? (() => new Date());
  const inFlight = createBackgroundWork();
  const firstRetryMs = options.retryMs ?? ctx.config.erp.importRetryFirstMs;
  const maxRetryMs = Math.max(firstRetryMs, ctx.config.erp.importRetryMaxMs);
  let stopped = false;
  // Each scheduled run starts a new generation: retries of an older one stop.
  let generation = 0;
  const pauses = new Set<() => void>();
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        pauses.delete(done);
        resolve();
      }
      pauses.add(done);
    });

  /** Why a run failed, or undefined when it succeeded or another run of the date was under way. */
  const attempt = async (date: string, trigger: ImportTrigger): Promise<string | undefined> => {
    try {
      const run = await runImport(ctx, date, trigger);
      return run.success || run.skipped ? undefined : (run.error ?? 'failed');
    } catch (error) {
      return isDatabaseUnavailable(error) ? 'database unavailable' : (error as Error).message;
    }
  };

  /** Imports `date`, and again after each failure, while nothing newer took over. */
  const importUntilGood = async (date: string, trigger: ImportTrigger) => {
    const mine = generation;
    const since = new Date();
    let failure = await attempt(date, trigger);
    for (let retry = 1; failure !== undefined; retry++) {
      const delay = importRetryDelayMs(retry, firstRetryMs, maxRetryMs);
      ctx.logger.warn({ retryInMs: delay, retry }, `ERP import of ${date} failed: ${failure}`);
      await pause(delay);
      if (stopped || generation !== mine) return;
      if (await hasSuccessfulImport(ctx.database.db, date, since).catch(() => false)) return;
      failure = await attempt(date, 'retry');
    }
  };

  const job = schedule.scheduleJob({ rule: ctx.config.erp.importCron, tz: 'Europe/Berlin' }, () => {
    generation += 1;
    for (const done of [...pauses]) done();
    void inFlight.add(importUntilGood(importTargetDate(ctx, now()), 'scheduler'));
  });
  if (!job) throw new Error(`ERP_IMPORT_CRON "${ctx.config.erp.importCron}" is not a valid cron expression`);

  const dates = [importTargetDate(ctx, now())];
  if (ctx.config.erp.mode === 'demo') dates.push(berlinDate(now()));
  const catchUp = inFlight.add(
    (async () => {
      if (ctx.config.erp.mode === 'demo')
        await ensureDemoPaymentMethods(ctx.database.db).catch((error) =>
          ctx.logger.error({ err: error }, 'could not create the demo payment methods'),
        );
      for (const date of new Set(dates)) {
        // Whether it is due is read once the database answers: an outage at start must not cost the day.
        for (let retry = 1; !stopped; retry++) {
          try {
            if (!(await hasSuccessfulImport(ctx.database.db, date))) await importUntilGood(date, 'startup');
            break;
          } catch (error) {
            const delay = importRetryDelayMs(retry, firstRetryMs, maxRetryMs);
            ctx.logger.warn({ err: error, retryInMs: delay }, `ERP import of ${date} failed: database unavailable`);
            await pause(delay);
          }
        }
      }
    })(),
  );

  return {
    catchUp,
    nextRun() {
      const next = job.nextInvocation();
      return next ? new Date(next.getTime()) : null;
    },
    async stop() {
      stopped = true;
      job.cancel();
      for (const done of [...pauses]) done();
      await inFlight.settled();
    },
  };
}
