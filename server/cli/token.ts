// Prints a development token: npm run token -- <personalnummer> [--role <name>]...
// `--role tourline-sync` mints a token of the sync role (tours of any driver, any account);
// `npm run token -- --back-office <name>` one of the back-office role for that person (the admin API, the console).
// The service mints tokens only for a caller holding the admin key: it is read from ADMIN_API_KEY
// (its first key) or ADMIN_API_KEY_FILE, else from the data directory, where development keeps it.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { adminKeyFile } from '../auth/adminKey.js';

const usage = 'usage: npm run token -- <personalnummer> [--role <name>]...  |  npm run token -- --back-office <name>';
let args: { personalnummer?: string; roles?: string[]; backOffice?: string };
try {
  const { values, positionals } = parseArgs({
    options: { role: { type: 'string', multiple: true }, 'back-office': { type: 'string' } },
    allowPositionals: true,
  });
  args = { personalnummer: positionals.length === 1 ? positionals[0] : undefined, roles: values.role, backOffice: values['back-office'] };
  if (args.backOffice !== undefined && (positionals.length > 0 || args.roles)) args = {};
} catch (error) {
  args = {};
  console.error((error as Error).message);
}
const { personalnummer, roles, backOffice } = args;
const base = process.env.TOURLINE_URL ?? `http://localhost:${process.env.PORT ?? 3000}`;
if (backOffice === undefined ? !personalnummer || !/^\d+$/.test(personalnummer) : backOffice.trim() === '') {
  console.error(usage);
  process.exit(2);
}

function adminKey(): string | undefined {
  if (process.env.ADMIN_API_KEY) return process.env.ADMIN_API_KEY.split(',')[0].trim();
  const file = process.env.ADMIN_API_KEY_FILE || adminKeyFile(path.resolve(process.env.DATA_DIR || './data'));
  return existsSync(file) ? readFileSync(file, 'utf8').split(',')[0].trim() : undefined;
}

const key = adminKey();
if (!key) {
  console.error('No admin key: set ADMIN_API_KEY, or DATA_DIR to the data directory of the running service.');
  process.exit(1);
}
try {
  const response = await fetch(`${base}/dev/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-admin-api-key': key },
    body: JSON.stringify(backOffice === undefined ? { personalnummer: Number(personalnummer), roles } : { backOffice }),
  });
  const body = await response.json();
  if (!response.ok) {
    console.error(`${response.status} ${body.title ?? ''}: ${body.detail ?? ''}`);
    process.exit(1);
  }
  console.log(body.accessToken);
} catch (error) {
  console.error(`Cannot reach Tourline at ${base} (is it running with AUTH_MODE=dev?): ${(error as Error).message}`);
  process.exit(1);
}
