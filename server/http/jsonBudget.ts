import { validation } from '../errors.js';

/**
 * JSON.parse costs per value, not per byte: 2 MiB of `0,0,…` (a million values) holds the event
 * loop for 60–200 ms, 2 MiB of `{},{},…` about a second. A valid request stays far below these
 * densities, because its values are fields with names: at least about ten bytes each, and an
 * object or array per hundred. Counting before the parse keeps any body within the budget.
 */
const BYTES_PER_CONTAINER = 32;
const BYTES_PER_VALUE = 8;

/** Whether the body holds at most `maxContainers` objects and arrays and `maxValues` values, counted outside strings. */
function withinBudget(body: Buffer, maxContainers: number, maxValues: number): boolean {
  let containers = 0;
  let separators = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x2c) {
      if (++separators > maxValues) return false;
    } else if ((c === 0x7b || c === 0x5b) && ++containers > maxContainers) return false;
  }
  return true;
}

/** Refuses, before JSON.parse, a body denser in values than a valid request can be. */
export function densityBudget(bodyLimitBytes: number) {
  const maxContainers = Math.ceil(bodyLimitBytes / BYTES_PER_CONTAINER);
  const maxValues = Math.ceil(bodyLimitBytes / BYTES_PER_VALUE);
  return (body: Buffer) => {
    if (!withinBudget(body, maxContainers, maxValues)) {
      throw validation(`The body holds more JSON values than ${maxValues}, or more objects and arrays than ${maxContainers}`);
    }
  };
}
