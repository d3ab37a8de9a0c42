import { generateDemoTours } from '../../server/integrations/erp/demoData.js';
import type { ErpGateway } from '../../server/integrations/erp/gateway.js';

/** An ERP whose tour read waits until `open()`: `reading` settles when an import is inside it. */
export function gatedErp() {
  let open!: () => void;
  let started!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const reading = new Promise<void>((resolve) => {
    started = resolve;
  });
  const erp: ErpGateway = {
    async fetchTours(date) {
      started();
      await gate;
      return { tours: generateDemoTours(date), refused: [] };
    },
    async pushCompletion() {},
    async pushCancellation() {},
  };
  return { erp, open, reading };
}
