/**
 * Several tabs (or windows, or workers) of one web app open the same storage. Each may queue
 * actions, but only one of them, the leader, sends the outbox; the others tell it when they
 * wrote an entry, and it tells them when it recorded an answer. When the leader goes (its tab
 * closes), the next one takes over and sends what is still in storage, its own entries and
 * everyone else's. The service recognises a resend by the event id, so nothing arrives twice.
 */
export interface TabCoordinator {
  /** Calls `onLead` once this tab leads: at once when no other tab does, otherwise when the leader is gone. */
  lead(onLead: () => void): void;
  /** Gives up the lead (or the wait for it). */
  resign(): void;
  /** Tells the other tabs that this one wrote to the outbox. */
  announce(): void;
  /** Calls `onWrite` whenever another tab announced a write. */
  listen(onWrite: () => void): void;
  close(): void;
}

interface LockManagerLike {
  request(name: string, options: { signal?: AbortSignal }, callback: () => Promise<unknown>): Promise<unknown>;
}
interface ChannelLike {
  postMessage(message: unknown): void;
  onmessage: ((event: unknown) => void) | null;
  close(): void;
}
type ChannelFactory = new (name: string) => ChannelLike;

/** Leadership through a Web Lock (released by the browser when the tab goes), news through a BroadcastChannel. */
export class WebLocksTabs implements TabCoordinator {
  private readonly channel: ChannelLike;
  private held: { abort: AbortController; release: () => void } | undefined;
  private announced = false;

  constructor(
    private readonly name: string,
    private readonly locks: LockManagerLike,
    Channel: ChannelFactory,
  ) {
    this.channel = new Channel(`tourline:${name}`);
  }

  lead(onLead: () => void) {
    if (this.held) return;
    const abort = new AbortController();
    const held: { abort: AbortController; release: () => void } = { abort, release: () => undefined };
    this.held = held;
    this.locks
      .request(
        `tourline:${this.name}`,
        { signal: abort.signal },
        () =>
          new Promise<void>((release) => {
            held.release = release;
            onLead();
          }),
      )
      .catch(() => undefined); // aborted: resigned while waiting
  }

  resign() {
    this.held?.abort.abort();
    this.held?.release();
    this.held = undefined;
  }

  announce() {
    // Several writes in one turn (an answer of many entries) make one message.
    if (this.announced) return;
    this.announced = true;
    void Promise.resolve().then(() => {
      this.announced = false;
      this.channel.postMessage('outbox');
    });
  }

  listen(onWrite: () => void) {
    this.channel.onmessage = () => onWrite();
  }

  close() {
    this.resign();
    this.channel.onmessage = null;
    this.channel.close();
  }
}

/** Web Locks and BroadcastChannel when the platform has both (browsers); undefined elsewhere. */
export function detectTabs(name: string): TabCoordinator | undefined {
  const g = globalThis as { navigator?: { locks?: LockManagerLike }; BroadcastChannel?: ChannelFactory };
  const locks = g.navigator?.locks;
  return locks && g.BroadcastChannel ? new WebLocksTabs(name, locks, g.BroadcastChannel) : undefined;
}
