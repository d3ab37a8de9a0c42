import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { errorCatalogue } from '../errors.js';

export const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const START = '<!-- error-codes: written by `npm run docs:errors` from server/errors.ts -->';
const END = '<!-- /error-codes -->';

/** The error table as the README shows it, from the catalogue. */
export function errorTable(): string {
  const rows = Object.entries(errorCatalogue).map(
    ([code, { status, title, cause }]) => `| \`${code}\` | ${status} | ${title} | ${cause} |`,
  );
  return ['| Code | Status | Title | Cause |', '|---|---|---|---|', ...rows].join('\n');
}

/** The text with the table between its markers replaced by the current one. */
export function withErrorTable(text: string): string {
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) throw new Error(`The markers of the error table are missing: ${START} ... ${END}`);
  return `${text.slice(0, start + START.length)}\n${errorTable()}\n${text.slice(end)}`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(README, withErrorTable(readFileSync(README, 'utf8')));
}
