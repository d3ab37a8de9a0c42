import type { Logger } from 'pino';
import { generateDemoTours } from './demoData.js';
import type { CompletionWriteBack, ErpDocument, ErpGateway } from './gateway.js';

export interface DemoErp extends ErpGateway {
  /** The write-backs received, newest last (the last 100), so tests and the demo can inspect them. */
  writeBacks: { document: ErpDocument; writeBack: CompletionWriteBack; idempotencyKey: string }[];
}

/** An ERP inside the process: generated tours for any date, write-backs logged and kept in memory. */
export function createDemoErp(logger: Logger): DemoErp {
  const writeBacks: DemoErp['writeBacks'] = [];
  return {
    writeBacks,
    async fetchTours(date) {
      return { tours: generateDemoTours(date), refused: [] };
    },
    async pushCompletion(document, writeBack, idempotencyKey) {
      logger.info({ document, writeBack, idempotencyKey }, 'demo ERP: completion written back');
      writeBacks.push({ document, writeBack, idempotencyKey });
      if (writeBacks.length > 100) writeBacks.shift();
    },
  };
}
