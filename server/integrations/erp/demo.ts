import type { Logger } from 'pino';
import type { CompletionWriteBack, ErpDocument, ErpGateway } from './gateway.js';

export interface DemoErp extends ErpGateway {
  /** The write-backs received, newest last (bounded), so tests and the demo can inspect them. */
  writeBacks: { document: ErpDocument; writeBack: CompletionWriteBack }[];
}

export function createDemoErp(logger: Logger): DemoErp {
  const writeBacks: DemoErp['writeBacks'] = [];
  return {
    writeBacks,
    async fetchTours() {
      return [];
    },
    async pushCompletion(document, writeBack) {
      logger.info({ document, writeBack }, 'demo ERP: completion written back');
      writeBacks.push({ document, writeBack });
      if (writeBacks.length > 100) writeBacks.shift();
    },
  };
}
