import type { ServerResponse } from 'node:http';

/**
 * A JSON answer, serialised once and written with its length in one `end`. express's `res.json`
 * gives the same bytes and headers, through a content-type lookup and a charset parse per answer.
 */
export function sendJson(res: ServerResponse, status: number, value: unknown, mediaType = 'application/json') {
  const body = JSON.stringify(value) ?? '';
  res.statusCode = status;
  res.setHeader('Content-Type', `${mediaType}; charset=utf-8`);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}
