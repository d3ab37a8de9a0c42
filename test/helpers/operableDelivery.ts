import { randomUUID } from 'node:crypto';
import { newTour } from './factories.js';
import type { TestServer } from './server.js';

let nextAccount = 3100;

export interface OperableOptions {
  openAmountCents?: number;
  paymentMethodId?: string | null;
}

/** A driver of an account of its own, for a tour the test builds itself. */
export async function newDriver(api: TestServer) {
  const accountId = nextAccount++;
  return { accountId, token: await api.token(accountId) };
}

/** A driver with one delivery: line 0 scannable (3 pieces, none scanned, 10 € each), line 1 a service line. */
export async function operableDelivery(api: TestServer, options: OperableOptions = {}) {
  const { accountId, token } = await newDriver(api);
  const tour = await newTour(api.db, {
    accountId,
    openAmountCents: options.openAmountCents ?? 5000,
    paymentMethodId: options.paymentMethodId ?? null,
    positions: [
      { scannable: true, quantity: 3, scannedQuantity: 0, state: 'InProgress', unitPriceCents: 1000 },
      { scannable: false, quantity: 1, unitPriceCents: null },
    ],
  });
  const { delivery, items } = tour.deliveries[0];
  return { accountId, token, delivery, items, path: `/deliveries/${delivery.id}` };
}

/** A scan as POST /deliveries/{id}/scans takes it. */
export const scan = (deliveryItemId: string, action: string, extra: Record<string, unknown> = {}) => ({
  clientScanId: randomUUID(),
  deliveryItemId,
  action,
  occurredAt: new Date().toISOString(),
  ...extra,
});
