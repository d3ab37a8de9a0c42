import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { SyncTourRequest } from '../../../shared/schemas/tours.js';
import { createDemoErp } from './demo.js';
import { createHttpErp } from './http.js';

export interface CompletionWriteBack {
  deliveredAt: string;
  state: 'completed';
  paymentTerm: string | null;
  creditAmountCents: number;
}

export interface ErpDocument {
  belegartId: number;
  belegnummer: string;
}

/** A day's tours; one that does not fit the contract is refused on its own (why, in `refused`), not with the day. */
export interface ErpDay {
  tours: SyncTourRequest[];
  refused: string[];
}

export interface ErpGateway {
  /** Every tour of a Berlin calendar day; throws DomainError upstream_unavailable when the day cannot be read. */
  fetchTours(date: string): Promise<ErpDay>;
  /**
   * Writes a completion back (never line quantities); throws upstream_unavailable on failure.
   * `idempotencyKey` is the same for every copy of one completion (`completionIdempotencyKey`).
   */
  pushCompletion(document: ErpDocument, writeBack: CompletionWriteBack, idempotencyKey: string): Promise<void>;
}

/**
 * The `Idempotency-Key` of a delivery's completion. A delivery is completed once (the completion's
 * key is the delivery id), so the key follows from it alone: automatic retries, an admin retry and
 * a restart send the same key without storing one.
 */
export const completionIdempotencyKey = (deliveryId: string) => `completion-${deliveryId}`;

export function createErpGateway(config: Config['erp'], logger: Logger): ErpGateway {
  return config.mode === 'http' ? createHttpErp(config, logger) : createDemoErp(logger);
}
