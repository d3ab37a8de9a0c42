import type { ErrorCode } from '../shared/schemas/common.js';

/**
 * The error catalogue. Domain code throws `DomainError`s with one of these codes; only the
 * HTTP layer turns them into statuses and problem+json.
 */
export const errorCatalogue: Record<ErrorCode, { status: number; title: string; cause: string }> = {
  validation: {
    status: 400,
    title: 'Validation failed',
    cause: 'The request does not fit its schema or breaks a domain rule; `errors` names the fields.',
  },
  invalid_state_transition: {
    status: 400,
    title: 'Invalid state transition',
    cause: 'The delivery or line is in a state that does not allow the operation.',
  },
  unauthorized: {
    status: 401,
    title: 'Authentifizierung fehlgeschlagen',
    cause: 'Bearer token or admin key missing, invalid or expired, or the account is inactive.',
  },
  forbidden: {
    status: 403,
    title: 'Forbidden',
    cause:
      "The caller may not do this with what it names: a driver token sent another account's tour or delivery, or changed an account (see docs/authorization.md).",
  },
  not_found: { status: 404, title: 'Not found', cause: 'The resource does not exist or belongs to another account.' },
  conflict: { status: 409, title: 'Conflict', cause: 'The resource is still referenced, or the key or id it brings is already taken.' },
  payload_too_large: { status: 413, title: 'Payload too large', cause: 'The body or an uploaded part exceeds its size limit.' },
  unsupported_media_type: {
    status: 415,
    title: 'Unsupported media type',
    cause: 'The body is not of a content type the endpoint accepts.',
  },
  rate_limited: {
    status: 429,
    title: 'Too many requests',
    cause:
      'Too many refused requests to `/admin/...` or `/dev/...` from one address, or device reports sent more than once a second; `Retry-After` says when to try again.',
  },
  client_too_old: {
    status: 426,
    title: 'Client too old',
    cause:
      'The app names an SDK release (`Tourline-Client`) older than the service serves (`CLIENT_MIN_VERSION`), or a protocol it no longer speaks; `minimumVersion` names the oldest served. The app keeps its outbox and sends it once updated.',
  },
  upstream_unavailable: {
    status: 502,
    title: 'Upstream unavailable',
    cause:
      'The ERP or the document store is unreachable or answered with an error (502); 503 with `Retry-After` while the database or the identity provider cannot be asked.',
  },
  internal: { status: 500, title: 'Internal error', cause: 'Something failed on our side; the log has the details under the request id.' },
};

export interface FieldProblem {
  path: string;
  message: string;
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly errors?: FieldProblem[],
    /** Overrides the catalogue's status where the spec asks for another (a failed upload is 500). */
    readonly status?: number,
    /** Sent as `Retry-After`: the failure passes, and the client should try again, not give up. */
    readonly retryAfterSeconds?: number,
    /** Members of the problem beyond the standard ones (`minimumVersion`). */
    readonly extensions?: Record<string, string>,
  ) {
    super(message);
  }
}

export const validation = (message: string, errors?: FieldProblem[]) => new DomainError('validation', message, errors);
export const notFound = (what: string) => new DomainError('not_found', `${what} not found`);
export const forbidden = (message: string, errors?: FieldProblem[]) => new DomainError('forbidden', message, errors);
export const conflict = (message: string) => new DomainError('conflict', message);
export const unauthorized = (message = 'Authentifizierung fehlgeschlagen') => new DomainError('unauthorized', message);
export const upstream = (message: string) => new DomainError('upstream_unavailable', message);
/** A system we depend on is out for a while: 503 with `Retry-After`. */
export const unavailable = (message: string, retryAfterSeconds: number) =>
  new DomainError('upstream_unavailable', message, undefined, 503, retryAfterSeconds);
