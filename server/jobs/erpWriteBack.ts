import type { AppContext } from '../context.js';
import { runDueCancellations } from '../engine/completion/cancellationWriteBack.js';
import { runDueFollowUps } from '../engine/completion/followUp.js';
import { isDatabaseUnavailable } from '../db/availability.js';
import { asJobRun } from '../observability/requestContext.js';

type Deps = Pick<AppContext, 'database' | 'documents' | 'erp' | 'logger' | 'config'>;

export interface ErpWriteBackJob {
  stop(): Promise<void>;
}

/** Polls for due follow-ups (write-backs of completions and, with ERP_PUSH_CANCELLATIONS, of cancellations; missing reports) until stopped. */
export function startErpWriteBackJob(deps: Deps): ErpWriteBackJob {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const tick = () => {
    running = asJobRun('erp-writeback', () =>
      runDueFollowUps(deps)
        .then(() => (deps.config.erp.pushCancellations ? runDueCancellations(deps) : 0))
        .then(() => undefined)
        // It runs again at the next poll; an outage is logged by the database health, not with a stack per poll.
        .catch((error) =>
          isDatabaseUnavailable(error)
            ? deps.logger.warn('ERP write-back job: database unavailable')
            : deps.logger.error({ err: error }, 'ERP write-back job failed'),
        ),
    ).finally(() => {
      running = undefined;
      if (!stopped) timer = setTimeout(tick, deps.config.erp.pushPollMs).unref();
    });
  };
  timer = setTimeout(tick, deps.config.erp.pushPollMs).unref();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
