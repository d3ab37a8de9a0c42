import type { OutboxEntry } from '../outbox.js';
import type { TabCoordinator } from '../tabs.js';
import type { ClientCore } from './core.js';
import type { Sender } from './sender.js';
import { toRejected, type Status } from './status.js';

/**
 * The client's side of sharing storage with other tabs: it sends only while it leads, and
 * whenever another tab wrote, it reads the outbox again, sends what others queued (when it
 * leads) and settles the handles of its own actions that another tab sent.
 */
export class Tabs {
  constructor(
    private readonly core: ClientCore,
    private readonly sender: Sender,
    private readonly status: Status,
    private readonly coordinator: TabCoordinator,
  ) {
    sender.leading = false;
    core.outbox.onWrite = () => coordinator.announce();
    coordinator.listen(() => void this.absorb());
  }

  /** Competes for the lead; once it has it, takes over everything in storage and sends. */
  lead() {
    this.coordinator.lead(
      () =>
        void this.absorb().then(() => {
          this.sender.leading = true;
          this.sender.wake();
        }),
    );
  }

  resign() {
    this.sender.leading = false;
    this.coordinator.resign();
  }

  close() {
    this.resign();
    this.core.outbox.onWrite = () => undefined;
    this.coordinator.close();
  }

  /** Between sends, so that an answer being recorded here is never overtaken by an older read. */
  private absorb() {
    return this.sender.serial
      .run(async () => {
        const { core } = this;
        const { added, changed, removed } = await core.outbox.reload();
        for (const entry of [...changed, ...removed]) this.settleHandle(entry, removed.includes(entry));
        core.emitChange(...[...added, ...changed, ...removed].map((e) => core.tourOfAction(e.action)));
        core.emitStatus();
        if (added.length) this.sender.scheduleFlush();
      })
      .catch((error) => this.status.recordError(error));
  }

  private settleHandle(entry: OutboxEntry, gone: boolean) {
    if (entry.state === 'rejected' && !gone) {
      const rejection = toRejected(entry, this.core);
      this.core.outcomes.settle(entry.id, { status: 'rejected', rejection });
      this.core.events.emit('rejected', rejection);
    } else if (gone || entry.state === 'acknowledged') {
      this.core.outcomes.settle(entry.id, { status: 'applied' });
    }
  }
}
