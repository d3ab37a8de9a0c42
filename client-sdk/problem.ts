import type { Problem } from '../shared/schemas/common.js';

/** An answer of the service other than 2xx, carrying its problem+json body. */
export class ProblemError extends Error {
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly detail: string | undefined;
  readonly errors: Problem['errors'];
  /** From a `Retry-After` header, when the service sent one. */
  readonly retryAfterMs: number | undefined;
  /**
   * The body is problem+json, as every error of the service is. A proxy's or a load balancer's
   * error page is not the service's verdict on the request.
   */
  readonly fromService: boolean;
  /** With 426 `client_too_old`: the oldest SDK release the service serves. */
  readonly minimumVersion: string | undefined;

  constructor(status: number, problem: Partial<Problem> & { code?: string }, retryAfterMs?: number, fromService = true) {
    super(problem.detail ?? problem.title ?? `HTTP ${status}`);
    // Keeps instanceof working where Error subclasses are compiled to ES5 functions.
    Object.setPrototypeOf(this, ProblemError.prototype);
    this.name = 'ProblemError';
    this.status = status;
    this.code = problem.code ?? codeForStatus(status);
    this.title = problem.title ?? `HTTP ${status}`;
    this.detail = problem.detail;
    this.errors = problem.errors;
    this.retryAfterMs = retryAfterMs;
    this.fromService = fromService;
    this.minimumVersion = typeof problem.minimumVersion === 'string' ? problem.minimumVersion : undefined;
  }

  /** Worth repeating later: the service was unavailable or asked to slow down. */
  get transient(): boolean {
    return this.status >= 500 || this.status === 429 || this.status === 408;
  }
}

/**
 * The request never got the service's answer: no connection, a timeout, the answer was lost, or
 * something else answered in its place (a captive portal's login page).
 */
export class NetworkError extends Error {
  constructor(
    message: string,
    readonly cause?: unknown,
  ) {
    super(message);
    Object.setPrototypeOf(this, NetworkError.prototype);
    this.name = 'NetworkError';
  }
}

function codeForStatus(status: number): string {
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'not_found';
  if (status === 409) return 'conflict';
  if (status === 413) return 'payload_too_large';
  if (status === 415) return 'unsupported_media_type';
  if (status === 426) return 'client_too_old';
  if (status === 502 || status === 503 || status === 504) return 'upstream_unavailable';
  if (status >= 500) return 'internal';
  return 'validation';
}

/** `Retry-After` as seconds or an HTTP date, in milliseconds from `now`. */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export const isTransient = (error: unknown) => error instanceof NetworkError || (error instanceof ProblemError && error.transient);
