import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The configured admin key, else (development only) one kept in the data directory. */
export function resolveAdminKey(configured: string | undefined, dataDir: string | undefined): { key: string; generated: boolean } {
  if (configured) return { key: configured, generated: false };
  const file = dataDir && path.join(dataDir, 'admin-api-key');
  if (file && existsSync(file)) return { key: readFileSync(file, 'utf8').trim(), generated: false };
  const key = randomBytes(24).toString('base64url');
  if (file) writeFileSync(file, key, { mode: 0o600 });
  return { key, generated: true };
}

/** Compares in constant time; hashing first makes the lengths equal. */
export function adminKeyMatcher(key: string) {
  const expected = createHash('sha256').update(key).digest();
  return (candidate: string | undefined) =>
    candidate !== undefined && timingSafeEqual(createHash('sha256').update(candidate).digest(), expected);
}
