import type { IncomingMessage } from 'node:http';

/**
 * At most one JSON object or array per this many bytes of the body limit. A valid request stays
 * far below (its objects carry fields); a body of nothing but `{}` would cost JSON.parse about a
 * second of the event loop at 2 MiB, far more than its size suggests.
 */
const BYTES_PER_CONTAINER = 32;

export class TooManyContainers extends Error {
  readonly type = 'entity.too.complex';
}

/** Counts `{` and `[` outside strings, stopping at `max`. */
function containersWithin(body: Buffer, max: number): boolean {
  let count = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if ((c === 0x7b || c === 0x5b) && ++count > max) return false;
  }
  return true;
}

/** body-parser's `verify`: refuses, before JSON.parse, a body with more objects and arrays than its limit allows. */
export function containerBudget(bodyLimitBytes: number) {
  const max = Math.ceil(bodyLimitBytes / BYTES_PER_CONTAINER);
  return (_req: IncomingMessage, _res: unknown, body: Buffer) => {
    if (!containersWithin(body, max)) throw new TooManyContainers(`The body holds more than ${max} JSON objects and arrays`);
  };
}
