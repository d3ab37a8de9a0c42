import { and, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { MarkMailSentResponse } from '../../shared/schemas/admin.js';
import type { Db } from '../db/client.js';
import { deliveries, reviewResolutions } from '../db/schema.js';
import { keepReviewResolution } from './reviewMarker.js';
import { notFound } from '../errors.js';

// The back office's bookkeeping: written here, beside every other write, but no driver event.

/**
 * Sets the mail-sent time of completed deliveries where it is still open. The conditional
 * update makes concurrent calls mark each delivery once; the later call sees it as sent.
 * Bookkeeping of the mail client, not a driver event: nothing is synced.
 */
export async function markMailSent(db: Db, numbers: string[]): Promise<MarkMailSentResponse> {
  const requested = [...new Set(numbers)];
  return db.transaction(async (tx) => {
    const marked = await tx
      .update(deliveries)
      .set({ mailSentAt: sql`now()` })
      .where(and(inArray(deliveries.belegnummer, requested), eq(deliveries.state, 'completed'), isNull(deliveries.mailSentAt)))
      .returning({ belegnummer: deliveries.belegnummer });
    const known = await tx
      .select({
        belegnummer: deliveries.belegnummer,
        completed: sql<boolean>`bool_or(${deliveries.state} = 'completed')`.mapWith(Boolean),
      })
      .from(deliveries)
      .where(inArray(deliveries.belegnummer, requested))
      .groupBy(deliveries.belegnummer);

    const markedSet = new Set(marked.map((r) => r.belegnummer));
    const completedOf = new Map(known.map((r) => [r.belegnummer, r.completed]));
    const answer: MarkMailSentResponse = { marked: [], already_sent: [], not_completed: [], unknown: [] };
    for (const number of requested) {
      if (markedSet.has(number)) answer.marked.push(number);
      else if (!completedOf.has(number)) answer.unknown.push(number);
      else if (completedOf.get(number)) answer.already_sent.push(number);
      else answer.not_completed.push(number);
    }
    return answer;
  });
}

/**
 * Records a confirmation by the processor (with the token's subject when a back-office token
 * resolved it), and which change it confirmed. Back-office bookkeeping, not a driver event: no
 * change record, nothing synced. It takes the delivery's row lock, as every change does, so that
 * it confirms what was committed before it and nothing still in flight.
 */
export async function resolveReview(db: Db, deliveryId: string, by: { processor: string; subject: string | null }): Promise<void> {
  await db.transaction(async (tx) => {
    const [delivery] = await tx.select({ id: deliveries.id }).from(deliveries).where(eq(deliveries.id, deliveryId)).for('update');
    if (!delivery) throw notFound('Delivery');
    await tx.insert(reviewResolutions).values({
      deliveryId,
      processor: by.processor,
      processorSubject: by.subject,
      // Copied in the database: to the microsecond, as the marker it is compared with.
      confirmedChangeAt: sql`(SELECT ${deliveries.reviewChangedAt} FROM ${deliveries} WHERE ${deliveries.id} = ${deliveryId})`,
    });
    await keepReviewResolution(tx, deliveryId);
  });
}
