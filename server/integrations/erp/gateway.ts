import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { DomainError } from '../../errors.js';
import type { CancellationWriteBack, CompletionWriteBack } from '../../../shared/schemas/erp.js';
import type { SyncTourRequest } from '../../../shared/schemas/tours.js';
import { createDemoErp } from './demo.js';
import { createHttpErp } from './http.js';

export type { CancellationWriteBack, CompletionWriteBack };

export interface ErpDocument {
  belegartId: number;
  belegnummer: string;
}

/** A day's tours; one that does not fit the contract is refused on its own (why, in `refused`), not with the day. */
export interface ErpDay {
  tours: SyncTourRequest[];
  refused: string[];
}

/**
 * The ERP answered a 4xx other than 408 and 429: the same request would be refused again, so it
 * is not retried by itself. The message carries the ERP's answer (truncated).
 */
export class ErpRefused extends DomainError {
  constructor(
    message: string,
    readonly erpStatus: number,
  ) {
    super('upstream_unavailable', message);
  }
}

export interface ErpGateway {
  /** Every tour of a Berlin calendar day; throws DomainError upstream_unavailable when the day cannot be read. */
  fetchTours(date: string): Promise<ErpDay>;
  /**
   * Writes a completion back (never line quantities); throws upstream_unavailable on failure,
   * `ErpRefused` when the ERP refused it. `idempotencyKey` is the same for every copy of one completion.
   */
  pushCompletion(document: ErpDocument, writeBack: CompletionWriteBack, idempotencyKey: string): Promise<void>;
  /** Writes a driver's cancellation back; fails like `pushCompletion`. */
  pushCancellation(document: ErpDocument, writeBack: CancellationWriteBack, idempotencyKey: string): Promise<void>;
}

/**
 * The `Idempotency-Key` of a delivery's completion and of its cancellation. A delivery is
 * completed or canceled once, so the key follows from its id alone: automatic retries, an admin
 * retry and a restart send the same key without storing one.
 */
export const completionIdempotencyKey = (deliveryId: string) => `completion-${deliveryId}`;
export const cancellationIdempotencyKey = (deliveryId: string) => `cancellation-${deliveryId}`;

export function createErpGateway(config: Config['erp'], logger: Logger): ErpGateway {
  return config.mode === 'http' ? createHttpErp(config, logger) : createDemoErp(logger);
}
