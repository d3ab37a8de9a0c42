import type { Request, Response } from 'express';
import { z } from 'zod';
import { PAGE_LIMIT_DEFAULT } from '../../shared/schemas/admin.js';
import { DomainError } from '../errors.js';

/** What one page of an admin list is asked for: how many, and after which entry (none: from the start). */
export interface PageRequest<K> {
  limit: number;
  after: K | null;
}

/** Reads the page a request asks for, and writes the cursor of the page after a key. */
export interface PageCursor<Key> {
  /** The page asked for, or undefined when neither limit nor cursor was sent (the whole list). */
  request(query: { limit?: number; cursor?: string }, filter: string): PageRequest<Key> | undefined;
  write(filter: string, after: Key): string;
}

/**
 * The cursor of one admin list: the list's name, the filter it was made under and the sort key
 * of the page's last entry, as base64url JSON. Opaque to the caller; a cursor of another list or
 * another filter, or one that does not decode, is refused (400), never read as something else.
 */
export function pageCursor<K extends z.ZodType>(list: string, key: K): PageCursor<z.output<K>> {
  const Payload = z.tuple([z.literal(list), z.string(), key]);
  const refuse = (message: string) => new DomainError('validation', 'Invalid query', [{ path: 'query.cursor', message }]);
  return {
    request(query: { limit?: number; cursor?: string }, filter: string): PageRequest<z.output<K>> | undefined {
      if (query.limit === undefined && query.cursor === undefined) return undefined;
      const limit = query.limit ?? PAGE_LIMIT_DEFAULT;
      if (query.cursor === undefined) return { limit, after: null };
      let decoded: unknown;
      try {
        decoded = JSON.parse(Buffer.from(query.cursor, 'base64url').toString('utf8'));
      } catch {
        throw refuse('not a cursor of this service');
      }
      const payload = Payload.safeParse(decoded);
      if (!payload.success) throw refuse(`not a cursor of ${list}`);
      if (payload.data[1] !== filter) throw refuse('made for other query parameters');
      return { limit, after: payload.data[2] as z.output<K> };
    },
    write: (filter: string, after: z.output<K>) => Buffer.from(JSON.stringify([list, filter, after])).toString('base64url'),
  };
}

/** A paged list's description in the API document; `count` says what `count` is then, where the answer has one. */
export const pagingDescription = (count = '') =>
  `With \`limit\` or \`cursor\`, one page${count}; the \`Link\` header (rel="next") names the next page ` +
  'and is absent on the last. Without either, the whole list (docs/back-office.md, "Paging").';

/**
 * One page of a list, or the whole list when neither limit nor cursor was sent: `load` reads it
 * under `filter`, and the next page is named in the `Link` header.
 */
export async function listPage<Key, E>(
  cursor: PageCursor<Key>,
  filter: string,
  http: { query: { limit?: number; cursor?: string }; req: Request; res: Response },
  load: (page: PageRequest<Key> | undefined) => Promise<{ entries: E[]; next: Key | null }>,
): Promise<E[]> {
  const page = cursor.request(http.query, filter);
  const { entries, next } = await load(page);
  if (page) linkNext(http.req, http.res, page.limit, next && cursor.write(filter, next));
  return entries;
}

/** Names the next page in the `Link` header: this request's URL with the cursor (and limit) of the next page. */
export function linkNext(req: Request, res: Response, limit: number, cursor: string | null): void {
  if (cursor === null) return;
  const url = new URL(req.originalUrl, 'http://service');
  url.searchParams.set('limit', String(limit));
  url.searchParams.set('cursor', cursor);
  res.set('Link', `<${url.pathname}${url.search}>; rel="next"`);
}
