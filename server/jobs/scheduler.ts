import schedule from 'node-schedule';
import { berlinDate } from '../../shared/rules/calendar.js';
import { isDatabaseUnavailable } from '../db/availability.js';
import { createBackgroundWork } from './background.js';
import { DATABASE_RETRY_MS } from './changeRetention.js';
import { ensureDemoPaymentMethods, hasSuccessfulImport, importTargetDate, runImport, type ImportContext } from './erpImport.js';

export interface ImportJobs {
  /** Settles when the start-up catch-up is done (it never rejects; failures are logged and in the run log). */
  catchUp: Promise<void>;
  /** When the scheduler fires next. */
  nextRun(): Date | null;
  /** Cancels the schedule and waits for a running import to finish. */
  stop(): Promise<void>;
}

export interface ImportJobOptions {
  now?: () => Date;
  /** How soon a run that failed on the database is tried again (tests shorten it). */
  retryMs?: number;
}

/** A run that failed on the database is tried again this often before the next scheduled one takes over. */
const DATABASE_RETRIES = 10;

/**
 * The scheduled ERP import (ERP_IMPORT_CRON in Europe/Berlin, target today + ERP_IMPORT_OFFSET_DAYS)
 * and the start-up catch-up: the target date is imported when no successful run is logged for
 * it; in demo mode today as well, so a fresh start shows today's tours.
 */
export function startImportJobs(ctx: ImportContext, options: ImportJobOptions = {}): ImportJobs {
  const now = options.now ?? (() => new Date());
  const inFlight = createBackgroundWork();
  const logFailure = (date: string) => (error: unknown) => ctx.logger.error({ err: error }, `ERP import of ${date} failed`);
  const retryMs = options.retryMs ?? DATABASE_RETRY_MS;
  let stopped = false;
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
  /** `work`, tried again after `retryMs` while it fails on the database: an outage must not cost the day's import. */
  const retrying = async (date: string, work: () => Promise<unknown>) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await work();
        return;
      } catch (error) {
        if (!isDatabaseUnavailable(error) || attempt > DATABASE_RETRIES || stopped) throw error;
        ctx.logger.warn({ retryInMs: retryMs }, `ERP import of ${date} failed: database unavailable`);
        await pause(retryMs);
        if (stopped) return;
      }
    }
  };

  const job = schedule.scheduleJob({ rule: ctx.config.erp.importCron, tz: 'Europe/Berlin' }, () => {
    const date = importTargetDate(ctx, now());
    void inFlight.add(retrying(date, () => runImport(ctx, date, 'scheduler')).catch(logFailure(date)));
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
        try {
          await retrying(date, async () => {
            if (!(await hasSuccessfulImport(ctx.database.db, date))) await runImport(ctx, date, 'startup');
          });
        } catch (error) {
          logFailure(date)(error);
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
