import { eq } from 'drizzle-orm';
import type { Db } from '../server/db/client.js';
import { processedEvents } from '../server/db/schema.js';

/** How the service decided an event: applied, or refused with the problem it recorded. */
export interface SettledEvent {
  eventId: string;
  applied: boolean;
  rejection: unknown;
}

const POLL_MS = 10;

/**
 * Resolves once the service has decided every one of `eventIds` (applied, or refused), as its
 * database records it in the transaction of the event's effect; rejects after `timeoutMs`.
 */
export async function waitForSettled(db: Db, eventIds: string[], { timeoutMs = 5000 } = {}): Promise<SettledEvent[]> {
  const deadline = Date.now() + timeoutMs;
  const settled: SettledEvent[] = [];
  for (const eventId of eventIds) {
    for (;;) {
      const [row] = await db
        .select({ rejection: processedEvents.rejection })
        .from(processedEvents)
        .where(eq(processedEvents.eventId, eventId));
      if (row) {
        settled.push({ eventId, applied: row.rejection === null, rejection: row.rejection });
        break;
      }
      if (Date.now() >= deadline) throw new Error(`the service did not settle event ${eventId} within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
  return settled;
}
