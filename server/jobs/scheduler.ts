import schedule from 'node-schedule';
import { berlinDate } from '../../shared/rules/calendar.js';
import { createBackgroundWork } from './background.js';
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
}

/**
 * The scheduled ERP import (ERP_IMPORT_CRON in Europe/Berlin, target today + ERP_IMPORT_OFFSET_DAYS)
 * and the start-up catch-up: the target date is imported when no successful run is logged for
 * it; in demo mode today as well, so a fresh start shows today's tours.
 */
export function startImportJobs(ctx: ImportContext, options: ImportJobOptions = {}): ImportJobs {
  const now = options.now ?? (() => new Date());
  const inFlight = createBackgroundWork();
  const logFailure = (date: string) => (error: unknown) => ctx.logger.error({ err: error }, `ERP import of ${date} failed`);

  const job = schedule.scheduleJob({ rule: ctx.config.erp.importCron, tz: 'Europe/Berlin' }, () => {
    const date = importTargetDate(ctx, now());
    void inFlight.add(runImport(ctx, date, 'scheduler').catch(logFailure(date)));
  });
  if (!job) throw new Error(`ERP_IMPORT_CRON "${ctx.config.erp.importCron}" is not a valid cron expression`);

  const dates = [importTargetDate(ctx, now())];
  if (ctx.config.erp.mode === 'demo') dates.push(berlinDate(now()));
  const catchUp = inFlight.add((async () => {
    if (ctx.config.erp.mode === 'demo') await ensureDemoPaymentMethods(ctx.database.db).catch((error) => ctx.logger.error({ err: error }, 'could not create the demo payment methods'));
    for (const date of new Set(dates)) {
      try {
        if (!await hasSuccessfulImport(ctx.database.db, date)) await runImport(ctx, date, 'startup');
      } catch (error) {
        logFailure(date)(error);
      }
    }
  })());

  return {
    catchUp,
    nextRun() {
      const next = job.nextInvocation();
      return next ? new Date(next.getTime()) : null;
    },
    async stop() {
      job.cancel();
      await inFlight.settled();
    },
  };
}
