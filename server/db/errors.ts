/** The unique or foreign-key constraint a PostgreSQL error names, if it is one of those. */
export function constraintViolation(error: unknown): { kind: 'unique' | 'foreign_key'; constraint: string } | undefined {
  // drizzle wraps driver errors; the PostgreSQL error sits in `cause`.
  for (let e = error as { code?: string; constraint?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code === '23505') return { kind: 'unique', constraint: e.constraint ?? '' };
    if (e.code === '23503') return { kind: 'foreign_key', constraint: e.constraint ?? '' };
  }
  return undefined;
}
