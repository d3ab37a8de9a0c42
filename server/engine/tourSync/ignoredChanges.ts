import { inArray } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { deliveryItems } from '../../db/schema.js';
import type { DeliveryRow } from '../../shapes/rows.js';
import type { DeliveryInput } from './deliveries.js';
import type { MasterData } from './masterData.js';

/** A completed or canceled delivery the ERP sent again. */
export interface FinalDelivery {
  input: DeliveryInput;
  prev: { delivery: DeliveryRow; accountId: number };
}

/**
 * Numbers of the final deliveries the ERP sent with other data than they hold: another tour,
 * customer, open amount, payment code or term, or other lines (number, article or quantity).
 * Final deliveries never change; the import reports these instead of counting them unchanged.
 */
export async function ignoredChanges(tx: Db, finals: FinalDelivery[], tourId: string, master: MasterData): Promise<string[]> {
  if (!finals.length) return [];
  const items = await tx
    .select({
      deliveryId: deliveryItems.deliveryId,
      lineNumber: deliveryItems.lineNumber,
      articleId: deliveryItems.articleId,
      quantity: deliveryItems.requiredQuantity,
    })
    .from(deliveryItems)
    .where(
      inArray(
        deliveryItems.deliveryId,
        finals.map((f) => f.prev.delivery.id),
      ),
    );
  const linesOf = (entries: { lineNumber: number; articleId: string; quantity: number }[]) =>
    entries
      .map((e) => `${e.lineNumber}:${e.articleId}:${e.quantity}`)
      .sort()
      .join(',');
  return finals
    .filter(({ input, prev: { delivery } }) => {
      const stored = linesOf(items.filter((i) => i.deliveryId === delivery.id));
      const sent = linesOf(
        input.positions.map((p) => ({
          lineNumber: p.lineNumber,
          articleId: master.articleByNumber.get(p.article.articleNumber)!.id,
          quantity: p.quantity,
        })),
      );
      return (
        delivery.tourId !== tourId ||
        delivery.customerId !== master.customerId.get(input.customer.erpCustomerId) ||
        delivery.erpOpenAmountCents !== input.openAmountCents ||
        delivery.erpPaymentMethodCode !== (input.paymentMethodCode ?? null) ||
        delivery.paymentTerm !== (input.paymentTerm ?? null) ||
        stored !== sent
      );
    })
    .map(({ input }) => input.belegnummer)
    .sort((a, b) => a.localeCompare(b));
}
