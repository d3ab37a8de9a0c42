import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { FieldProblem } from './errors.js';
import type { DocumentStore } from './integrations/documents/store.js';
import { describeDocuments } from './productionSummary.js';

/** A dependency the instance must have reached once before it counts as ready. */
export interface StartupCheck {
  /** The readiness problem's path: `documents`, `issuer`. */
  name: string;
  /** What is asked, in the operator's words: the bucket, the issuer's URL. */
  target: string;
  run(): Promise<void>;
}

// Retried soon, so that readiness follows within a second or two of the dependency answering;
// one request every 2 s at most is nothing to a bucket or an issuer.
const FIRST_RETRY_MS = 250;
const LAST_RETRY_MS = 2000;
// The same reason is written again at this interval while it lasts, not at every attempt.
const REPEAT_WARNING_MS = 30_000;

/**
 * Asks each dependency until it has answered once; until then readiness names it. Only the start
 * waits for this: a later outage keeps the behaviour of each dependency (cached keys, 503 on use).
 * A failure is one warning naming the target and the reason, without a stack, again when the
 * reason changes or every 30 s; the answer that follows is one info line. `first` settles once
 * every check was tried once.
 */
export function startStartupChecks(checks: StartupCheck[], logger: Logger) {
  // Not ready before the first answer: /readyz is served while the checks run.
  const failing = new Map(checks.map((check) => [check.name, `${check.target}: not answered yet`]));
  const warned = new Map<string, { reason: string; at: number }>();
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;

  const warn = (check: StartupCheck, reason: string) => {
    const last = warned.get(check.name);
    if (last?.reason === reason && Date.now() - last.at < REPEAT_WARNING_MS) return;
    warned.set(check.name, { reason, at: Date.now() });
    logger.warn({ check: check.name, target: check.target, reason }, `not ready: ${check.name} ${check.target} did not answer (${reason})`);
  };

  const attempt = async (check: StartupCheck, delayMs: number): Promise<void> => {
    try {
      await check.run();
      failing.delete(check.name);
      if (warned.has(check.name)) logger.info({ check: check.name, target: check.target }, `${check.name} answered: ${check.target}`);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      failing.set(check.name, `${check.target}: ${reason}`);
      warn(check, reason);
      if (stopped) return;
      const timer = setTimeout(() => {
        timers.delete(timer);
        void attempt(check, Math.min(delayMs * 2, LAST_RETRY_MS));
      }, delayMs);
      timer.unref();
      timers.add(timer);
    }
  };

  const first = Promise.all(checks.map((check) => attempt(check, FIRST_RETRY_MS))).then(() => undefined);
  return {
    first,
    /** The checks that have not answered yet, as readiness names them. */
    pending: (): FieldProblem[] => [...failing].map(([path, message]) => ({ path, message })),
    stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}

export type StartupChecks = ReturnType<typeof startStartupChecks>;

// Content-addressed stores keep one copy of it, however often instances start.
const PROBE = Buffer.from('Tourline checks at start that the document store accepts a write.\n');

/** The document store takes a write: the bucket exists and the credentials may write to it. */
export function documentStoreCheck(config: Config, store: DocumentStore): StartupCheck {
  return {
    name: 'documents',
    target: describeDocuments(config),
    run: async () => {
      await store.put(PROBE, 'text/plain', 'tourline-start-check.txt');
    },
  };
}
