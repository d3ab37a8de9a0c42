import type { Db } from '../db/client.js';
import { renderTour, type RenderedTour } from '../shapes/tourDetails.js';

export type TourReader = (db: Db, tourId: string, accountId: number) => Promise<RenderedTour>;

/**
 * Tours as last rendered, by account and tour, the least recently read dropped beyond
 * `maxBytes`. Each read still asks the database for the tour's version (a statement that reads
 * the rows' versions only), so an answer is never older than the database; only the JSON of an
 * unchanged tour is not made again. Each instance keeps its own; none is shared.
 */
export function createTourReader(maxBytes: number): TourReader {
  const rendered = new Map<string, RenderedTour>();
  let bytes = 0;
  const forget = (key: string) => {
    const old = rendered.get(key);
    if (!old) return;
    rendered.delete(key);
    bytes -= old.body.length;
  };
  return async (db, tourId, accountId) => {
    const key = `${accountId}/${tourId}`;
    const cached = rendered.get(key);
    const answer = await renderTour(db, tourId, accountId, cached?.version);
    const current = answer === 'unchanged' ? cached! : answer;
    forget(key);
    if (current.body.length <= maxBytes) {
      // Insertion order is the Map's order: the first key is the least recently read.
      rendered.set(key, current);
      bytes += current.body.length;
      for (const oldest of rendered.keys()) {
        if (bytes <= maxBytes) break;
        forget(oldest);
      }
    }
    return current;
  };
}
