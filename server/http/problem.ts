import type { ErrorRequestHandler, Response } from 'express';
import { z } from 'zod';
import type { ErrorCode } from '../../shared/schemas/common.js';
import { DomainError, errorCatalogue, type FieldProblem } from '../errors.js';

export function sendProblem(res: Response, code: ErrorCode, detail: string, errors?: FieldProblem[], status?: number) {
  const entry = errorCatalogue[code];
  res.status(status ?? entry.status).type('application/problem+json').json({
    type: `https://tourline.dev/problems/${code}`,
    title: entry.title,
    status: status ?? entry.status,
    detail,
    code,
    ...(errors?.length ? { errors } : {}),
  });
}

export function zodProblems(error: z.ZodError, prefix?: string): FieldProblem[] {
  return error.issues.map((issue) => ({
    path: [prefix, ...issue.path.map(String)].filter(Boolean).join('.'),
    message: issue.message,
  }));
}

/** The one error handler: typed errors become problem+json; anything else is a logged 500 without details. */
export const problemHandler: ErrorRequestHandler = (error, req, res, _next) => {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (error instanceof DomainError) {
    if (error.code === 'internal' || (error.status ?? 0) >= 500) req.log?.error({ err: error }, 'request failed');
    sendProblem(res, error.code, error.message, error.errors, error.status);
    return;
  }
  if (error instanceof z.ZodError) {
    sendProblem(res, 'validation', 'The request is not valid', zodProblems(error));
    return;
  }
  // body-parser marks its own errors with `type` and `status`.
  const type = (error as { type?: string }).type;
  if (type === 'entity.parse.failed') return sendProblem(res, 'validation', 'The body is not valid JSON');
  if (type === 'entity.too.large') return sendProblem(res, 'payload_too_large', 'The body exceeds the size limit');
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') return sendProblem(res, 'unsupported_media_type', 'Unsupported body encoding');
  if (type === 'request.aborted') return void res.destroy();
  req.log?.error({ err: error }, 'unexpected error');
  sendProblem(res, 'internal', 'An internal error occurred');
};
