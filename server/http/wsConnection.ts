/** One live connection of /sync/ws: resume from a cursor, pages of changes as the client takes them, heartbeat and closing. */
import { WebSocket, type RawData } from 'ws';
import { WsClientMessage, type WsServerMessage } from '../../shared/schemas/sync.js';
import type { AppContext, DriverActor } from '../context.js';
import { decodeCursor, encodeCursor, readChangePages, type ChangePage, type ChangeRead } from '../engine/changeFeed.js';
import { isDatabaseUnavailable } from '../db/availability.js';
import { deferred } from '../db/combining.js';
import { DomainError } from '../errors.js';

const PAGE_SIZE = 500;
/**
 * The most reads one statement carries: a reconnect storm (every socket of an instance resuming
 * from an old cursor) goes in several short reads instead of one long one, which would hold a
 * connection of the pool and, when it reads under the change log's lock, every writer.
 */
const MAX_READS_PER_STATEMENT = 500;
// How soon a read that failed on the database is tried again.
const DATABASE_RETRY_MS = 1000;

/** Close codes of /sync/ws; docs/sync-protocol.md lists them for client authors. */
export const CloseCode = {
  /** Shutting down (a deploy): reconnect, the load balancer sends you to another instance. */
  serviceRestart: 1012,
  internal: 1011,
  tokenExpired: 4401,
  accountDeactivated: 4403,
  slowConsumer: 4408,
} as const;

/** A page of changes and its `changes` message, serialised once for every socket that sends it. */
type SharedPage = ChangePage & { text: string };
export type ReadPage = (personalnummer: number, after: number | undefined) => Promise<SharedPage>;

/**
 * Reads of the live connections, gathered and made together: one statement for every connection
 * woken by the same commits, and one read and one serialised message for the connections of an
 * account that start from the same seq. One read runs at a time: the connections woken while it
 * runs go together in the next, which starts when it ends (or in the next turn of the event loop
 * when none runs). So under many commits a read serves many of them. It reads up to the head the
 * change notifier knows (`ChangeNotifier.head`), which needs no lock. A read joins a
 * batch only before it starts: a connection asking later must see commits made since. A batch
 * takes at most `maxReads`, the longest waiting first; the rest go in the reads after it.
 */
export function sharedReader(ctx: AppContext, maxReads = MAX_READS_PER_STATEMENT): ReadPage {
  type Waiting = { read: ChangeRead; page: Promise<SharedPage>; resolve(page: SharedPage): void; reject(error: unknown): void };
  let waiting: Map<string, Waiting> | undefined;
  let reading = false;
  const run = async (batch: Map<string, Waiting>) => {
    const entries = [...batch.values()];
    try {
      const pages = await readChangePages(
        ctx.database.db,
        entries.map((e) => e.read),
        PAGE_SIZE,
        'cursor',
        ctx.changes.head(),
      );
      pages.forEach((page, i) => {
        if (page instanceof DomainError) return entries[i].reject(page);
        const text = JSON.stringify({
          type: 'changes',
          changes: page.changes,
          cursor: encodeCursor(ctx.database.epoch, page.seq),
        } satisfies WsServerMessage);
        entries[i].resolve({ ...page, text });
      });
    } catch (error) {
      for (const entry of entries) entry.reject(error);
    }
  };
  const next = () => {
    if (reading || !waiting) return;
    // A Map keeps insertion order: the longest waiting go first.
    const batch = new Map<string, Waiting>();
    for (const [key, entry] of waiting) {
      if (batch.size === maxReads) break;
      batch.set(key, entry);
      waiting.delete(key);
    }
    if (waiting.size === 0) waiting = undefined;
    reading = true;
    void run(batch).finally(() => {
      reading = false;
      next();
    });
  };
  return (personalnummer, after) => {
    if (!waiting) {
      waiting = new Map();
      setImmediate(next);
    }
    const key = `${personalnummer}:${after ?? ''}`;
    let entry = waiting.get(key);
    if (!entry) {
      const read = { personalnummer, sinceSeq: after };
      let settle!: Pick<Waiting, 'resolve' | 'reject'>;
      const page = new Promise<SharedPage>((resolve, reject) => (settle = { resolve, reject }));
      entry = { read, page, ...settle };
      waiting.set(key, entry);
    }
    return entry.page;
  };
}

function parseClientMessage(text: string) {
  try {
    const parsed = WsClientMessage.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export class SyncConnection {
  /** Set by `resume`; until then nothing is sent. */
  private resumed = false;
  private lastSent: number | undefined;
  /** Bumped by every resume, so a read started for an older cursor is thrown away. */
  private generation = 0;
  /** The next read answers even when it finds nothing, telling the client it is caught up. */
  private announce = false;
  private pumping = false;
  private dirty = false;
  private alive = true;
  /** Made only when something waits for the close: thousands of idle sockets need none. */
  private whenClosed: Promise<void> | undefined;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly ws: WebSocket,
    private readonly actor: DriverActor,
    private readonly ctx: AppContext,
    private readonly maxBufferedBytes: number,
    private readonly readPage: ReadPage,
  ) {
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
  }

  private get closed(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return (this.whenClosed ??= new Promise((resolve) => this.ws.once('close', () => resolve())));
  }

  private get open() {
    return this.ws.readyState === WebSocket.OPEN;
  }

  get personalnummer() {
    return this.actor.personalnummer;
  }

  /** The seq this connection has been sent up to, once resumed. */
  get sentSeq() {
    return this.resumed ? (this.lastSent ?? 0) : undefined;
  }

  closeIfAccount(personalnummer: number) {
    if (this.actor.personalnummer === personalnummer && this.open) this.ws.close(CloseCode.accountDeactivated, 'account deactivated');
  }

  /** When its token expires; the server then calls `expire`. */
  get expiresAt() {
    return this.actor.tokenExpiresAt;
  }

  expire() {
    if (this.open) this.ws.close(CloseCode.tokenExpired, 'token expired');
  }

  private onMessage(data: RawData, isBinary: boolean) {
    this.alive = true;
    const message = isBinary ? undefined : parseClientMessage(data.toString());
    if (!message) {
      this.send({
        type: 'error',
        code: 'validation',
        message: 'Send JSON text messages: {"type":"resume","cursor":"..."}, {"type":"ping"} or {"type":"device","report":{...}}',
      });
      return;
    }
    if (message.type === 'ping') {
      this.send({ type: 'pong' });
      return;
    }
    if (message.type === 'device') {
      void this.storeReport(message.report);
      return;
    }
    let seq: number | undefined;
    try {
      seq = message.cursor ? decodeCursor(this.ctx.database.epoch, message.cursor, 'cursor') : undefined;
    } catch (error) {
      this.sendError(error);
      return;
    }
    this.resumed = true;
    this.lastSent = seq;
    this.generation += 1;
    this.announce = true;
    void this.pump();
  }

  /** A device report is answered with a `device` message, never an `error`: that would make the client resync. */
  private async storeReport(report: unknown) {
    const { ctx } = this;
    const answer = await ctx.devices.answer(ctx.database.db, this.actor.personalnummer, report).catch((error: unknown) => {
      if (isDatabaseUnavailable(error)) ctx.database.health.failed(error);
      else ctx.logger.error({ err: error }, 'storing a device report failed');
      return { status: 'refused' as const, code: 'internal', message: 'Not stored; send it again later' };
    });
    this.send({ type: 'device', ...answer });
  }

  wake(upTo: number, accounts?: ReadonlySet<number>) {
    if (!this.resumed) return;
    // Nothing of this account in the commit: its next read (any later wake) still starts at lastSent.
    if (accounts && !accounts.has(this.actor.personalnummer)) return;
    if (this.lastSent !== undefined && upTo <= this.lastSent && !this.pumping) return;
    void this.pump();
  }

  /** One reader per connection; wake-ups during a read make it read once more afterwards. */
  private async pump() {
    if (this.pumping) {
      this.dirty = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.dirty = false;
        await this.catchUp();
      } while (this.dirty && this.open);
    } catch (error) {
      if (error instanceof DomainError) {
        // An expired cursor: the client must resync and resume again.
        this.resumed = false;
        this.sendError(error);
      } else if (isDatabaseUnavailable(error)) {
        // The socket stays: the read is tried again until the database answers, from where it stopped.
        this.ctx.database.health.failed(error);
        this.retry ??= setTimeout(() => {
          this.retry = undefined;
          void this.pump();
        }, DATABASE_RETRY_MS);
      } else {
        this.ctx.logger.error({ err: error }, 'reading changes for a WebSocket failed');
        this.ws.close(CloseCode.internal, 'internal error, resume from your cursor');
      }
    } finally {
      this.pumping = false;
    }
  }

  private async catchUp() {
    for (;;) {
      if (!this.resumed || !this.open) return;
      const generation = this.generation;
      const page = await this.readPage(this.actor.personalnummer, this.lastSent);
      if (generation !== this.generation) continue;
      let written: ReturnType<typeof deferred<void>> | undefined;
      if (page.changes.length > 0 || this.announce) {
        // A backlog goes out one page at a time, as fast as the client takes it.
        if (page.hasMore) written = deferred<void>();
        if (!this.sendText(page.text, written?.resolve)) return;
        this.announce = false;
      }
      this.lastSent = page.seq;
      if (!page.hasMore) return;
      if (written) await Promise.race([written.promise, this.closed]);
    }
  }

  private send(message: WsServerMessage): boolean {
    return this.sendText(JSON.stringify(message));
  }

  /** `onWritten`: called once the text is written out, or the socket failed. */
  private sendText(text: string, onWritten?: () => void): boolean {
    if (!this.open) return false;
    if (this.ws.bufferedAmount > this.maxBufferedBytes) {
      this.closeSlowConsumer();
      return false;
    }
    this.ws.send(text, onWritten);
    return true;
  }

  private sendError(error: unknown) {
    const domain = error instanceof DomainError ? error : undefined;
    this.send({
      type: 'error',
      code: domain?.code ?? 'internal',
      message: domain?.message ?? 'An internal error occurred',
      ...(domain?.errors?.length ? { errors: domain.errors } : {}),
    });
  }

  private closeSlowConsumer() {
    this.ctx.logger.warn(
      { personalnummer: this.actor.personalnummer, buffered: this.ws.bufferedAmount },
      'closing a WebSocket that does not keep up',
    );
    this.ws.close(CloseCode.slowConsumer, 'slow consumer, resume from your cursor');
  }

  /** Called by the heartbeat: a connection that did not answer the last ping, or does not take its data, goes. */
  beat() {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    if (this.ws.bufferedAmount > this.maxBufferedBytes) return this.closeSlowConsumer();
    if (!this.alive) return this.ws.terminate();
    this.alive = false;
    this.ws.ping();
  }

  async closeAndWait(code: number, reason: string) {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    this.ws.close(code, reason);
    const timer = setTimeout(() => this.ws.terminate(), 2000);
    await this.closed;
    clearTimeout(timer);
  }

  dispose() {
    clearTimeout(this.retry);
  }
}
