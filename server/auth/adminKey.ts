import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Where development keeps its generated admin key; `npm run token` reads it from there. */
export const adminKeyFile = (dataDir: string) => path.join(dataDir, 'admin-api-key');

/** The configured admin keys, else (development only) one kept in the data directory. */
export function resolveAdminKeys(configured: string[] | undefined, dataDir: string | undefined): { keys: string[]; generated: boolean } {
  if (configured?.length) return { keys: configured, generated: false };
  const file = dataDir && adminKeyFile(dataDir);
  if (file && existsSync(file)) return { keys: [readFileSync(file, 'utf8').trim()], generated: false };
  const key = randomBytes(24).toString('base64url');
  if (file) writeFileSync(file, key, { mode: 0o600 });
  return { keys: [key], generated: true };
}

const digest = (key: string) => createHash('sha256').update(key).digest();

/**
 * Compares in constant time; hashing first makes the lengths equal. Every key is compared, so
 * the time says nothing about which one (if any) matched.
 */
export function adminKeyMatcher(keys: string[]) {
  const expected = keys.map(digest);
  return (candidate: string | undefined) => {
    if (candidate === undefined) return false;
    const given = digest(candidate);
    let matched = false;
    for (const key of expected) matched = timingSafeEqual(given, key) || matched;
    return matched;
  };
}
