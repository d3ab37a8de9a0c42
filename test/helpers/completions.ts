import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { completions, deliveries } from '../../server/db/schema.js';
import { newTour, type NewTourOptions } from './factories.js';
import type { TestServer } from './server.js';
import { completionForm, type CompletionParts } from './uploads.js';

let nextAccount = 61_000;

/** A delivery to complete, for a driver of its own. */
export async function setup(api: TestServer, options: Partial<NewTourOptions> = {}) {
  const accountId = nextAccount++;
  const token = await api.token(accountId);
  const tour = await newTour(api.db, { accountId, ...options });
  const { delivery, items } = tour.deliveries[0];
  return { accountId, token, tour, delivery, items };
}

export const complete = async (api: TestServer, token: string, deliveryId: string, parts: CompletionParts = {}) =>
  api.post(`/deliveries/${deliveryId}/complete`, await completionForm(parts), { token });

export async function completionOf(api: TestServer, deliveryId: string) {
  const [row] = await api.db.select().from(completions).where(eq(completions.deliveryId, deliveryId));
  return row;
}

export async function stateOf(api: TestServer, deliveryId: string) {
  const [row] = await api.db
    .select({ state: deliveries.state, completedAt: deliveries.completedAt })
    .from(deliveries)
    .where(eq(deliveries.id, deliveryId));
  return row;
}

export async function paymentMethod(api: TestServer, token: string, collectOnSite: boolean, active = true) {
  const created = await api.post(
    '/payment-methods',
    { code: `PM-${randomUUID().slice(0, 8)}`, name: collectOnSite ? 'Barzahlung' : 'Rechnung', collectOnSite },
    { token },
  );
  if (!active) await api.patch(`/payment-methods/${created.body.paymentMethod.id}`, { active: false }, { token });
  return created.body.paymentMethod.id as string;
}
