/** The unique or foreign-key constraint a PostgreSQL error names, if it is one of those. */
export function constraintViolation(error: unknown): { kind: 'unique' | 'foreign_key'; constraint: string } | undefined {
  // drizzle wraps driver errors; the PostgreSQL error sits in `cause`.
  for (let e = error as { code?: string; constraint?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code === '23505') return { kind: 'unique', constraint: e.constraint ?? '' };
    if (e.code === '23503') return { kind: 'foreign_key', constraint: e.constraint ?? '' };
  }
  return undefined;
}

/** A lock wait cut short by `lock_timeout` (or NOWAIT): the row is held by another transaction. */
export function isLockTimeout(error: unknown): boolean {
  for (let e = error as { code?: string; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.code === '55P03') return true;
  }
  return false;
}
