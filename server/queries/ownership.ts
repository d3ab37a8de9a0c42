import { and, eq } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { attachments, deliveries, tours } from '../db/schema.js';

/** Whether the delivery is on one of the account's tours. */
export async function ownsDelivery(db: Db, accountId: number, deliveryId: string): Promise<boolean> {
  const [found] = await db
    .select({ id: deliveries.id })
    .from(deliveries)
    .innerJoin(tours, eq(tours.id, deliveries.tourId))
    .where(and(eq(deliveries.id, deliveryId), eq(tours.accountId, accountId)));
  return found !== undefined;
}

/** An attachment of a delivery on one of the account's tours (any account's with null, the back office); undefined when unknown or foreign. */
export async function ownAttachment(db: Db, accountId: number | null, attachmentId: string) {
  const [attachment] = await db
    .select({ id: attachments.id, reference: attachments.reference })
    .from(attachments)
    .innerJoin(deliveries, eq(deliveries.id, attachments.deliveryId))
    .innerJoin(tours, eq(tours.id, deliveries.tourId))
    .where(and(eq(attachments.id, attachmentId), accountId === null ? undefined : eq(tours.accountId, accountId)));
  return attachment;
}
