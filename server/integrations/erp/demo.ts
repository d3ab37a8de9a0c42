import type { Logger } from 'pino';
import { generateDemoTours } from './demoData.js';
import type { CancellationWriteBack, CompletionWriteBack, ErpDocument, ErpGateway } from './gateway.js';

type Received<T> = { document: ErpDocument; writeBack: T; idempotencyKey: string };

export interface DemoErp extends ErpGateway {
  /** The write-backs received, newest last (the last 100 of each kind), so tests and the demo can inspect them. */
  writeBacks: Received<CompletionWriteBack>[];
  cancellations: Received<CancellationWriteBack>[];
}

const keep = <T>(list: T[], entry: T) => {
  list.push(entry);
  if (list.length > 100) list.shift();
};

/** An ERP inside the process: generated tours for any date, write-backs logged and kept in memory. */
export function createDemoErp(logger: Logger): DemoErp {
  const writeBacks: DemoErp['writeBacks'] = [];
  const cancellations: DemoErp['cancellations'] = [];
  return {
    writeBacks,
    cancellations,
    async fetchTours(date) {
      return { tours: generateDemoTours(date), refused: [] };
    },
    async pushCompletion(document, writeBack, idempotencyKey) {
      logger.info({ document, writeBack, idempotencyKey }, 'demo ERP: completion written back');
      keep(writeBacks, { document, writeBack, idempotencyKey });
    },
    async pushCancellation(document, writeBack, idempotencyKey) {
      logger.info({ document, writeBack, idempotencyKey }, 'demo ERP: cancellation written back');
      keep(cancellations, { document, writeBack, idempotencyKey });
    },
  };
}
