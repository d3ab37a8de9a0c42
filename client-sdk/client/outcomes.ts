import type { RejectedEvent } from './status.js';

/** What became of an action: the service applied it (or had it already), or refused it. */
export type Outcome = { status: 'applied' } | { status: 'rejected'; rejection: RejectedEvent };

/** The promises behind each action's handle, settled when the service answers for the entry. */
export class Outcomes {
  private readonly waiting = new Map<string, { promise: Promise<Outcome>; resolve: (outcome: Outcome) => void }>();

  of(id: string): Promise<Outcome> {
    let waiting = this.waiting.get(id);
    if (!waiting) {
      let resolve!: (outcome: Outcome) => void;
      const promise = new Promise<Outcome>((r) => {
        resolve = r;
      });
      waiting = { promise, resolve };
      this.waiting.set(id, waiting);
    }
    return waiting.promise;
  }

  /** The action never made it into the outbox: nothing will settle it. */
  forget(id: string) {
    this.waiting.delete(id);
  }

  settle(id: string, outcome: Outcome) {
    const waiting = this.waiting.get(id);
    if (!waiting) return;
    this.waiting.delete(id);
    waiting.resolve(outcome);
  }
}
