import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import type { ErrorCode } from '../../shared/schemas/common.js';
import { WsClientMessage, type WsServerMessage } from '../../shared/schemas/sync.js';
import { bearerToken } from '../auth/authenticate.js';
import type { AppContext, DriverActor } from '../context.js';
import { decodeCursor, encodeCursor, readChanges, type ChangePage } from '../engine/changeFeed.js';
import { isDatabaseUnavailable } from '../db/availability.js';
import { DomainError, unavailable } from '../errors.js';
import { activeAccounts } from '../queries/accounts.js';
import { problemBody } from './problem.js';
import { HeartbeatWheel } from './heartbeatWheel.js';
import { DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS } from './unavailable.js';

export const SYNC_WS_PATH = '/sync/ws';
const PAGE_SIZE = 500;
const MAX_CLIENT_MESSAGE_BYTES = 16 * 1024;
// How soon a read that failed on the database is tried again.
const DATABASE_RETRY_MS = 1000;
// setTimeout's longest delay; longer token lifetimes re-arm the timer.
const MAX_TIMER_MS = 2 ** 31 - 1;
// Between batches of sockets closed at shutdown, so their reconnects reach the other instances spread out.
const CLOSE_BATCH_PAUSE_MS = 100;

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
type ReadPage = (personalnummer: number, after: number | undefined) => Promise<SharedPage>;

/**
 * The connections of one account that read from the same seq in the same turn (woken by the same
 * notification) share one read and one serialised message. A read is shared only within its turn:
 * a connection asking later must see commits made since.
 */
function sharedReader(ctx: AppContext): ReadPage {
  const inTurn = new Map<string, Promise<SharedPage>>();
  return (personalnummer, after) => {
    const key = `${personalnummer}:${after ?? ''}`;
    let read = inTurn.get(key);
    if (!read) {
      read = readChanges(ctx.database.db, personalnummer, after, PAGE_SIZE, 'cursor').then((page) => ({
        ...page,
        text: JSON.stringify({
          type: 'changes',
          changes: page.changes,
          cursor: encodeCursor(ctx.database.epoch, page.seq),
        } satisfies WsServerMessage),
      }));
      inTurn.set(key, read);
      queueMicrotask(() => inTurn.delete(key));
    }
    return read;
  };
}

export interface SyncSocketServer {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Refuses new upgrades and closes every socket with 1012, `batchSize` at a time (a spread-out reconnect wave). */
  close(batchSize?: number): Promise<void>;
  /** Open sockets, and the lowest seq sent to a resumed one (metrics). */
  stats(): { clients: number; slowestSeq: number | undefined };
}

function refuse(socket: Duplex, code: ErrorCode, detail: string, error?: DomainError) {
  const body = JSON.stringify(problemBody(code, detail, undefined, error?.status));
  const status = JSON.parse(body).status as number;
  const retryAfter = error?.retryAfterSeconds === undefined ? '' : `Retry-After: ${error.retryAfterSeconds}\r\n`;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/problem+json\r\n${retryAfter}` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

/** What `ws` would refuse in its own words (text/html), found first so that the answer is a problem. */
function handshakeProblem(req: IncomingMessage): string | undefined {
  if (req.method !== 'GET') return 'A WebSocket handshake is a GET';
  if (req.headers.upgrade?.toLowerCase() !== 'websocket') return 'The Upgrade header must be websocket';
  if (!/^[+/0-9A-Za-z]{22}==$/.test(req.headers['sec-websocket-key'] ?? '')) return 'Missing or invalid Sec-WebSocket-Key header';
  if (!['8', '13'].includes(req.headers['sec-websocket-version'] ?? '')) return 'Sec-WebSocket-Version must be 13 (or 8)';
  return undefined;
}

/** The token from `Authorization: Bearer` or, for browsers that cannot set headers, the subprotocol pair `bearer, <token>`. */
function upgradeToken(req: IncomingMessage): string | undefined {
  const fromHeader = bearerToken(req.headers.authorization);
  if (fromHeader) return fromHeader;
  const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  return offered[0] === 'bearer' && offered[1] ? offered[1] : undefined;
}

/**
 * The live change feed. Each connection remembers the last seq it sent and, on every wake-up,
 * reads `seq > lastSent` for its account from the change log: the notification says only that
 * something changed, so a missed, repeated or merged notification never loses or repeats data.
 */
export function createSyncSocketServer(ctx: AppContext): SyncSocketServer {
  const { maxBufferedBytes, heartbeatMs } = ctx.config.sync;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_CLIENT_MESSAGE_BYTES,
    // Change pages over COMPRESSION_MIN_BYTES go compressed to clients that offer it. No context
    // takeover and a small window keep each connection's zlib memory small with thousands open.
    perMessageDeflate: {
      threshold: ctx.config.compressionMinBytes,
      serverNoContextTakeover: true,
      clientNoContextTakeover: true,
      serverMaxWindowBits: 12,
      zlibDeflateOptions: { level: 3, memLevel: 7 },
    },
    handleProtocols: (protocols) => (protocols.has('bearer') ? 'bearer' : false),
  });
  // The connections by account: a notification reaches only the accounts it names.
  const byAccount = new Map<number, Set<SyncConnection>>();
  const allConnections = () => [...byAccount.values()].flatMap((set) => [...set]);
  let closing = false;
  const readPage = sharedReader(ctx);

  const unsubscribe = ctx.changes.subscribe((upTo, accounts) => {
    if (!accounts) {
      for (const set of byAccount.values()) for (const connection of set) connection.wake(upTo);
      return;
    }
    for (const account of accounts) for (const connection of byAccount.get(account) ?? []) connection.wake(upTo, accounts);
  });

  // A deactivated account's sockets close at once on every instance (announced through the change
  // channel); each heartbeat round reads the connected accounts again, in case an announcement was missed.
  const closeAccount = (personalnummer: number) => {
    for (const connection of byAccount.get(personalnummer) ?? []) connection.closeIfAccount(personalnummer);
  };
  const stopDeactivations = ctx.changes.onDeactivated(closeAccount);
  const recheckAccounts = async () => {
    const numbers = [...byAccount.keys()];
    const active = await activeAccounts(ctx.database.db, numbers);
    for (const n of numbers) if (!active.has(n)) closeAccount(n);
  };

  const heartbeat = new HeartbeatWheel<SyncConnection>(
    heartbeatMs,
    (connection) => connection.beat(),
    () => {
      recheckAccounts().catch((error) => ctx.logger.warn({ err: error }, 'checking the accounts of WebSockets failed'));
    },
  );

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    socket.on('error', () => socket.destroy());
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path !== SYNC_WS_PATH) return refuse(socket, 'not_found', `No WebSocket endpoint at ${path}`);
    const token = upgradeToken(req);
    let actor: DriverActor;
    try {
      actor = await ctx.auth.driver(token ? `Bearer ${token}` : undefined);
    } catch (error) {
      // Refused credentials (401) or an identity provider that cannot be asked (503).
      if (error instanceof DomainError) return refuse(socket, error.code, error.message, error);
      if (isDatabaseUnavailable(error)) {
        ctx.database.health.failed(error);
        return refuse(socket, 'upstream_unavailable', DATABASE_UNAVAILABLE, unavailable(DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS));
      }
      ctx.logger.error({ err: error }, 'WebSocket authentication failed');
      return refuse(socket, 'internal', 'An internal error occurred');
    }
    if (closing || socket.destroyed) return socket.destroy();
    const problem = handshakeProblem(req);
    if (problem) return refuse(socket, 'validation', problem);
    wss.handleUpgrade(req, socket, head, (ws) => {
      const connection = new SyncConnection(ws, actor, ctx, maxBufferedBytes, readPage);
      const account = byAccount.get(actor.personalnummer) ?? new Set();
      byAccount.set(actor.personalnummer, account.add(connection));
      heartbeat.add(connection);
      ws.once('close', () => {
        connection.dispose();
        heartbeat.delete(connection);
        account.delete(connection);
        if (account.size === 0 && byAccount.get(actor.personalnummer) === account) byAccount.delete(actor.personalnummer);
      });
    });
  }

  return {
    handleUpgrade(req, socket, head) {
      upgrade(req, socket, head).catch((error) => {
        ctx.logger.error({ err: error }, 'WebSocket upgrade failed');
        socket.destroy();
      });
    },
    async close(batchSize = Infinity) {
      closing = true;
      heartbeat.stop();
      unsubscribe();
      stopDeactivations();
      const open = allConnections();
      for (let i = 0; i < open.length; i += batchSize) {
        if (i > 0) await new Promise((resolve) => setTimeout(resolve, CLOSE_BATCH_PAUSE_MS));
        await Promise.all(
          open.slice(i, i + batchSize).map((c) => c.closeAndWait(CloseCode.serviceRestart, 'server restarting, reconnect')),
        );
      }
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
    stats() {
      let clients = 0;
      let slowestSeq: number | undefined;
      for (const set of byAccount.values()) {
        clients += set.size;
        for (const c of set) if (c.sentSeq !== undefined && (slowestSeq === undefined || c.sentSeq < slowestSeq)) slowestSeq = c.sentSeq;
      }
      return { clients, slowestSeq };
    },
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

class SyncConnection {
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
  private lastWrite: Promise<void> = Promise.resolve();
  private readonly closed: Promise<void>;
  private expiry: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly ws: WebSocket,
    private readonly actor: DriverActor,
    private readonly ctx: AppContext,
    private readonly maxBufferedBytes: number,
    private readonly readPage: ReadPage,
  ) {
    this.closed = new Promise((resolve) => ws.once('close', () => resolve()));
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    ws.on('error', (error) => ctx.logger.debug({ err: error }, 'WebSocket error'));
    this.armExpiry();
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

  private armExpiry() {
    const left = this.actor.tokenExpiresAt - Date.now();
    if (left <= 0) {
      this.ws.close(CloseCode.tokenExpired, 'token expired');
      return;
    }
    this.expiry = setTimeout(() => this.armExpiry(), Math.min(left, MAX_TIMER_MS));
  }

  private onMessage(data: RawData, isBinary: boolean) {
    this.alive = true;
    const message = isBinary ? undefined : parseClientMessage(data.toString());
    if (!message) {
      this.send({
        type: 'error',
        code: 'validation',
        message: 'Send JSON text messages: {"type":"resume","cursor":"..."} or {"type":"ping"}',
      });
      return;
    }
    if (message.type === 'ping') {
      this.send({ type: 'pong' });
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

  wake(upTo: number | undefined, accounts?: ReadonlySet<number>) {
    if (!this.resumed) return;
    // Nothing of this account in the commit: its next read (any later wake) still starts at lastSent.
    if (accounts && !accounts.has(this.actor.personalnummer)) return;
    if (upTo !== undefined && this.lastSent !== undefined && upTo <= this.lastSent && !this.pumping) return;
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
      if (page.changes.length > 0 || this.announce) {
        const sent = this.sendText(page.text);
        if (!sent) return;
        this.announce = false;
      }
      this.lastSent = page.seq;
      if (!page.hasMore) return;
      // A backlog goes out one page at a time, as fast as the client takes it.
      await Promise.race([this.lastWrite, this.closed]);
    }
  }

  private send(message: WsServerMessage): boolean {
    return this.sendText(JSON.stringify(message));
  }

  private sendText(text: string): boolean {
    if (!this.open) return false;
    if (this.ws.bufferedAmount > this.maxBufferedBytes) {
      this.closeSlowConsumer();
      return false;
    }
    this.lastWrite = new Promise((resolve) => this.ws.send(text, () => resolve()));
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
    clearTimeout(this.expiry);
    clearTimeout(this.retry);
  }
}
