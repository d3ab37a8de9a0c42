import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ErrorRequestHandler, Response } from 'express';
import { z } from 'zod';
import type { ErrorCode } from '../../shared/schemas/common.js';
import { DomainError, errorCatalogue, type FieldProblem } from '../errors.js';
import { RequestAborted } from './jsonBody.js';
import { recordError } from './requestLog.js';
import { sendJson } from './sendJson.js';

/** A refusal names at most this many field problems, so that its answer stays a few KB whatever was sent. */
export const MAX_LISTED_PROBLEMS = 25;

/** The RFC 9457 body; also written by hand where there is no express response (refused WebSocket upgrades). */
export function problemBody(
  code: ErrorCode,
  detail: string,
  errors?: FieldProblem[],
  status?: number,
  extensions?: Record<string, string>,
) {
  const entry = errorCatalogue[code];
  const cut = (errors?.length ?? 0) > MAX_LISTED_PROBLEMS;
  return {
    type: `https://tourline.dev/problems/${code}`,
    title: entry.title,
    status: status ?? entry.status,
    detail: cut ? `${detail} (the first ${MAX_LISTED_PROBLEMS} of ${errors!.length} problems are listed)` : detail,
    code,
    ...(errors?.length ? { errors: errors.slice(0, MAX_LISTED_PROBLEMS) } : {}),
    ...extensions,
  };
}

export function sendProblem(
  res: Response,
  code: ErrorCode,
  detail: string,
  errors?: FieldProblem[],
  status?: number,
  extensions?: Record<string, string>,
) {
  const body = problemBody(code, detail, errors, status, extensions);
  sendJson(res, body.status, body, 'application/problem+json');
}

export function zodProblems(error: z.ZodError, prefix?: string): FieldProblem[] {
  return error.issues.map((issue) => ({
    path: [prefix, ...issue.path.map(String)].filter(Boolean).join('.'),
    message: issue.message,
  }));
}

/**
 * Where in `value` a string holds what PostgreSQL cannot store as text or JSON: a NUL character,
 * or half of a surrogate pair (no character at all).
 */
function unstorableTextAt(value: unknown): string[] | undefined {
  if (typeof value === 'string') return value.includes('\0') || !value.isWellFormed() ? [] : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  // Every request body passes here: the path is built only for a find.
  for (const key in value) {
    const found = unstorableTextAt((value as Record<string, unknown>)[key]);
    if (found) return [key, ...found];
  }
  return undefined;
}

/** Inputs of up to this many JSON values are checked whole when they fail, so that the refusal names every field. */
const WHOLLY_CHECKED_VALUES = 2000;

/** Whether `value` holds at most `budget` JSON values (stops counting there). */
function isSmall(value: unknown, budget = { left: WHOLLY_CHECKED_VALUES }): boolean {
  budget.left -= 1;
  if (budget.left < 0) return false;
  if (value === null || typeof value !== 'object') return true;
  // By index: `for...in` would first list every key of a list of a million entries.
  const entries = Array.isArray(value) ? value : Object.values(value);
  for (let i = 0; i < entries.length; i++) if (!isSmall(entries[i], budget)) return false;
  return true;
}

// zod's own (internal) switch: every list and object stops at its first failing entry.
const ABORT_EARLY = { abortEarly: true } as z.core.ParseContext<z.core.$ZodIssue>;

/**
 * Request input checked against its schema: a misfit is 400 `validation` naming the fields (under
 * `prefix`). The check stops at the first problems, so that a body of thousands of broken entries
 * costs no more than a valid one; only a small input is checked again whole, to name all of them.
 */
export function parseInput<T extends z.ZodType>(schema: T, value: unknown, detail: string, prefix?: string): z.output<T> {
  const quick = schema.safeParse(value, ABORT_EARLY);
  const result = quick.success || !isSmall(value) ? quick : schema.safeParse(value);
  if (!result.success) throw new DomainError('validation', detail, zodProblems(result.error, prefix));
  const unstorable = unstorableTextAt(result.data);
  if (unstorable) {
    const path = [...(prefix ? [prefix] : []), ...unstorable].join('.');
    throw new DomainError('validation', detail, [{ path, message: 'must not contain NUL characters or unpaired surrogates' }]);
  }
  return result.data;
}

const clientErrorCodes: Partial<Record<number, ErrorCode>> = {
  401: 'unauthorized',
  404: 'not_found',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

/** The one error handler: typed errors become problem+json; anything else is a logged 500 without details. */
export const problemHandler: ErrorRequestHandler = (error, _req, res, _next) => {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (error instanceof DomainError) {
    // A 503 is a passing state (an outage, a drain), not a fault of this request: logged without a stack.
    if (error.code === 'internal' || ((error.status ?? 0) >= 500 && error.status !== 503)) recordError(res, error);
    if (error.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(error.retryAfterSeconds));
    sendProblem(res, error.code, error.message, error.errors, error.status, error.extensions);
    return;
  }
  if (error instanceof z.ZodError) {
    sendProblem(res, 'validation', 'The request is not valid', zodProblems(error));
    return;
  }
  if (error instanceof RequestAborted) return void res.destroy();
  // Other client errors raised by express itself (a path segment that is not valid percent-encoding).
  const status = (error as { status?: unknown }).status;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const code = clientErrorCodes[status] ?? 'validation';
    return sendProblem(res, code, (error as { expose?: boolean }).expose ? (error as Error).message : errorCatalogue[code].title);
  }
  recordError(res, error);
  sendProblem(res, 'internal', 'An internal error occurred');
};

/**
 * A request Node's HTTP parser refuses before express sees it (headers over the size limit, broken
 * framing, too slow to arrive), answered as problem+json like every other client error. As Node's
 * own answer, only while no response on the connection has begun, and the connection is closed.
 */
export function answerUnparsableRequest(error: Error & { code?: string }, socket: Socket) {
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, code, detail]: [number, ErrorCode, string] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'payload_too_large', 'The request headers exceed the size limit']
      : error.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
        ? [413, 'payload_too_large', 'The chunk extensions exceed the size limit']
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'validation', 'The request did not arrive in time']
          : [400, 'validation', 'The request is not valid HTTP'];
  endWithProblem(socket, new DomainError(code, detail, undefined, status));
  // A peer that never reads or closes must not keep the socket.
  socket.setTimeout(5_000, () => socket.destroy());
}

/**
 * A problem written straight onto the connection, where no HTTP response object exists (a request
 * Node could not parse, a refused WebSocket upgrade), with `Retry-After` as the handler sends it;
 * the connection is closed after it.
 */
export function endWithProblem(socket: Duplex, error: DomainError) {
  const body = problemBody(error.code, error.message, error.errors, error.status, error.extensions);
  const json = JSON.stringify(body);
  const retryAfter = error.retryAfterSeconds === undefined ? '' : `Retry-After: ${error.retryAfterSeconds}\r\n`;
  socket.end(
    `HTTP/1.1 ${body.status} ${STATUS_CODES[body.status]}\r\nContent-Type: application/problem+json\r\nX-Content-Type-Options: nosniff\r\n${retryAfter}` +
      `Content-Length: ${Buffer.byteLength(json)}\r\nX-Request-Id: ${randomUUID()}\r\nConnection: close\r\n\r\n${json}`,
  );
}
