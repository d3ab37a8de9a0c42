import type { Logger } from 'pino';
import { upstream } from '../server/errors.js';
import { createDemoErp } from '../server/integrations/erp/demo.js';
import type { CancellationWriteBack, CompletionWriteBack, ErpDocument, ErpGateway } from '../server/integrations/erp/gateway.js';

/** A completion or a cancellation the ERP accepted. */
export interface WriteBack<T = CompletionWriteBack> {
  document: ErpDocument;
  writeBack: T;
  idempotencyKey: string;
}

/** The ERP the test server talks to: the demo ERP's tours, and write-backs the test can make fail or hang. */
export interface ErpControl {
  /** Every completion the ERP accepted, oldest first (the last 100; a retried one arrives again with the same key). */
  readonly writeBacks: readonly WriteBack[];
  /** Every driver's cancellation the ERP accepted, likewise. */
  readonly cancellations: readonly WriteBack<CancellationWriteBack>[];
  /** The next `times` write-backs, completions and cancellations (every one, without a count), fail as an unreachable ERP; the service retries them. */
  failWriteBack(times?: number): void;
  /** Write-backs get no answer until `restore()` or the ERP timeout, then fail as a timed-out call does. */
  hangWriteBack(): void;
  /** Write-backs succeed again. */
  restore(): void;
}

export class TestErp implements ErpGateway, ErpControl {
  private readonly demo;
  private failures = 0;
  private hanging = false;
  private readonly hung = new Set<() => void>();

  constructor(
    logger: Logger,
    private readonly timeoutMs: number,
  ) {
    this.demo = createDemoErp(logger);
  }

  get writeBacks(): readonly WriteBack[] {
    return this.demo.writeBacks;
  }
  get cancellations(): readonly WriteBack<CancellationWriteBack>[] {
    return this.demo.cancellations;
  }

  failWriteBack(times = Infinity) {
    this.failures = times;
  }
  hangWriteBack() {
    this.hanging = true;
  }
  restore() {
    this.failures = 0;
    this.hanging = false;
    for (const release of this.hung) release();
  }

  fetchTours(date: string) {
    return this.demo.fetchTours(date);
  }

  async pushCompletion(document: ErpDocument, writeBack: CompletionWriteBack, idempotencyKey: string) {
    await this.answer();
    await this.demo.pushCompletion(document, writeBack, idempotencyKey);
  }
  async pushCancellation(document: ErpDocument, writeBack: CancellationWriteBack, idempotencyKey: string) {
    await this.answer();
    await this.demo.pushCancellation(document, writeBack, idempotencyKey);
  }

  /** Whether a write-back gets through now: it hangs or fails as the test asked. */
  private async answer() {
    if (this.hanging) await this.hang();
    if (this.failures > 0) {
      this.failures -= 1;
      throw upstream('the ERP is unreachable (test server: failWriteBack)');
    }
  }

  private hang() {
    return new Promise<never>((_, reject) => {
      const release = () => {
        clearTimeout(timer);
        this.hung.delete(release);
        reject(upstream('the ERP did not answer (test server: hangWriteBack)'));
      };
      const timer = setTimeout(release, this.timeoutMs);
      this.hung.add(release);
    });
  }
}
