/** One page of an admin list asked for: at most `limit` entries after the entry whose sort key is `after` (null: from the start). */
export interface PageRequest<K> {
  limit: number;
  after: K | null;
}

/** A page and the sort key of its last entry when more follow (null on the last page). */
export interface Page<T, K> {
  entries: T[];
  next: K | null;
}

/** Cuts rows read with `limit + 1` to the page: the extra row only tells that another page follows. */
export function cutPage<R, T, K>(rows: R[], limit: number, keyOf: (row: R) => K, toEntry: (row: R) => T): Page<T, K> {
  const entries = rows.slice(0, limit);
  return { entries: entries.map(toEntry), next: rows.length > limit ? keyOf(entries.at(-1)!) : null };
}
