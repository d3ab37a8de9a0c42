/**
 * Whether If-None-Match names `etag` (weakly compared, or `*`). Routes check it themselves
 * rather than leave it to express, which answers in full whenever the request also says
 * `Cache-Control: no-cache`, as fetch does with every If-None-Match.
 */
export function ifNoneMatch(header: string | undefined, etag: string): boolean {
  return !!header && header.split(',').some((tag) => [etag, `W/${etag}`, '*'].includes(tag.trim()));
}
