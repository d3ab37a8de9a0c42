import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

const context = new AsyncLocalStorage<{ requestId: string }>();

/** The id of the request (or job run) this code runs for, if any. */
export const currentRequestId = (): string | undefined => context.getStore()?.requestId;

/** Runs `work`, and everything it starts, as part of the request `requestId`. */
export const withRequestId = <T>(requestId: string, work: () => T): T => context.run({ requestId }, work);

/** A job run gets an id of its own (`<job>-<uuid>`), unless a request started it (a manual import keeps the request's). */
export const asJobRun = <T>(job: string, work: () => T): T => withRequestId(currentRequestId() ?? `${job}-${randomUUID()}`, work);

/** pino's options: every log line written while serving a request or running a job names it (`reqId`). */
export const loggerOptions = (level: string) => ({
  level,
  mixin: () => {
    const requestId = currentRequestId();
    return requestId ? { reqId: requestId } : {};
  },
});

/** Headers for calls to systems we do not own, so their logs can be matched with ours. */
export const requestIdHeader = (): Record<string, string> => {
  const requestId = currentRequestId();
  return requestId ? { 'x-request-id': requestId } : {};
};
