import type { EventResult } from '../../shared/schemas/sync.js';
import type { Refusal } from '../outbox.js';
import { NetworkError, ProblemError } from '../problem.js';

/** How the client reads the service's answers (and the lack of one). */
const isServerUnavailable = (e: unknown) => e instanceof ProblemError && (e.status === 429 || e.status === 408 || e.status >= 502);

export const resultRefusal = (r: EventResult): Refusal => ({
  code: r.code ?? 'rejected',
  message: r.message ?? 'rejected by the service',
  reason: r.reason,
  errors: r.errors,
});
export const problemRefusal = (p: ProblemError): Refusal => ({ code: p.code, message: p.detail ?? p.title, errors: p.errors });

/** The service no longer serves this release of the SDK: the outbox waits for the app's update (`needsUpdate`). */
export const isTooOld = (e: unknown): e is ProblemError => e instanceof ProblemError && e.status === 426;
/** A 4xx that repeating the same request cannot change, from the service or from a proxy (413). */
export const isClientError = (e: unknown): e is ProblemError =>
  e instanceof ProblemError && e.status >= 400 && e.status < 500 && ![401, 408, 426, 429].includes(e.status);
/** The service said no to the request itself; a proxy's error page is not its verdict, and is tried again later. */
export const isRejection = (e: unknown) => isClientError(e) && e.fromService;
/** The service itself answered with this status (a proxy's page of the same status does not count). */
export const serviceAnswered = (e: unknown, status: number) => e instanceof ProblemError && e.fromService && e.status === status;
/** The service is out of reach or asks to slow down: nothing else is worth sending now. */
export const isOutOfReach = (e: unknown) => e instanceof NetworkError || isServerUnavailable(e);
