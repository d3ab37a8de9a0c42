import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { bearerToken } from '../auth/authenticate.js';
import type { AppContext, DriverActor } from '../context.js';
import { isDatabaseUnavailable } from '../db/availability.js';
import { DomainError, unavailable } from '../errors.js';
import { inactiveAccounts } from '../queries/accounts.js';
import { checkClient } from './clientWindow.js';
import { endWithProblem } from './problem.js';
import { Deadlines } from './deadlines.js';
import { HeartbeatWheel } from './heartbeatWheel.js';
import { CloseCode, sharedReader, SyncConnection } from './wsConnection.js';
import { DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS } from './unavailable.js';

export const SYNC_WS_PATH = '/sync/ws';
const MAX_CLIENT_MESSAGE_BYTES = 16 * 1024;
/**
 * The smallest message compressed, whatever COMPRESSION_MIN_BYTES says below it. A commit's own
 * message (a few KB) compressed on its own saves a few hundred bytes and costs the sending
 * thread and each client a zlib pass: at 333 pushes/s over 10,000 sockets, a tenth of the main
 * thread. Pages of a backlog and large changes (a new tour) are well above it.
 */
const MIN_COMPRESSED_MESSAGE_BYTES = 8 * 1024;
// Between batches of sockets closed at shutdown, so their reconnects reach the other instances spread out.
const CLOSE_BATCH_PAUSE_MS = 100;

export interface SyncSocketServer {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Refuses new upgrades and closes every socket with 1012, `batchSize` at a time (a spread-out reconnect wave). */
  close(batchSize?: number): Promise<void>;
  /** Open sockets, and the lowest seq sent to a resumed one (metrics). */
  stats(): { clients: number; slowestSeq: number | undefined };
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
 * A browser page may open the socket only from the service's own origin (the request's Host) or
 * from an origin of CORS_ORIGINS: a bearer subprotocol is no cookie, but a foreign page must
 * not use a token it got hold of from the driver's browser. No Origin (native apps, Node) is no page.
 */
function originAllowed(req: IncomingMessage, allowed: ReadonlySet<string>): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  if (allowed.has(origin)) return true;
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === origin && url.host === req.headers.host;
  } catch {
    return false;
  }
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
    // Large messages go compressed to clients that offer it. No context takeover and a small
    // window keep each connection's zlib memory small with thousands open.
    perMessageDeflate: {
      threshold: Math.max(ctx.config.compressionMinBytes, MIN_COMPRESSED_MESSAGE_BYTES),
      serverNoContextTakeover: true,
      clientNoContextTakeover: true,
      serverMaxWindowBits: 12,
      zlibDeflateOptions: { level: 3, memLevel: 7 },
    },
    handleProtocols: (protocols) => (protocols.has('bearer') ? 'bearer' : false),
    // The connections are tracked by account below; ws's own set would hold each a second time.
    clientTracking: false,
  });
  // The connections by account: a notification reaches only the accounts it names.
  const byAccount = new Map<number, Set<SyncConnection>>();
  const allConnections = () => [...byAccount.values()].flatMap((set) => [...set]);
  let closing = false;
  const readPage = sharedReader(ctx);
  const allowedOrigins = new Set(ctx.config.corsOrigins);

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
    for (const n of await inactiveAccounts(ctx.database.db, [...byAccount.keys()])) closeAccount(n);
  };

  const heartbeat = new HeartbeatWheel<SyncConnection>(
    heartbeatMs,
    (connection) => connection.beat(),
    () => {
      recheckAccounts().catch((error) => ctx.logger.warn({ err: error }, 'checking the accounts of WebSockets failed'));
    },
  );
  const expiries = new Deadlines<SyncConnection>((connection) => connection.expire());

  // One listener for every socket, not a closure each: thousands of sockets stay open for hours.
  function destroyOnError(this: Duplex) {
    this.destroy();
  }
  function logError(error: Error) {
    ctx.logger.debug({ err: error }, 'WebSocket error');
  }

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    socket.on('error', destroyOnError);
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path !== SYNC_WS_PATH) return endWithProblem(socket, new DomainError('not_found', `No WebSocket endpoint at ${path}`));
    if (!originAllowed(req, allowedOrigins))
      return endWithProblem(socket, new DomainError('forbidden', 'The page of this Origin may not open the live feed (see CORS_ORIGINS)'));
    const token = upgradeToken(req);
    let actor: DriverActor;
    try {
      checkClient(req, ctx.config.clientMinVersion);
      actor = await ctx.auth.driver(token ? `Bearer ${token}` : undefined);
    } catch (error) {
      // An app too old (426), refused credentials (401) or an identity provider that cannot be asked (503).
      if (error instanceof DomainError) return endWithProblem(socket, error);
      if (isDatabaseUnavailable(error)) {
        ctx.database.health.failed(error);
        return endWithProblem(socket, unavailable(DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS));
      }
      ctx.logger.error({ err: error }, 'WebSocket authentication failed');
      return endWithProblem(socket, new DomainError('internal', 'An internal error occurred'));
    }
    if (closing || socket.destroyed) return socket.destroy();
    const problem = handshakeProblem(req);
    if (problem) return endWithProblem(socket, new DomainError('validation', problem));
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('error', logError);
      const connection = new SyncConnection(ws, actor, ctx, maxBufferedBytes, readPage);
      const account = byAccount.get(actor.personalnummer) ?? new Set();
      byAccount.set(actor.personalnummer, account.add(connection));
      heartbeat.add(connection);
      expiries.set(connection, connection.expiresAt);
      ws.once('close', () => {
        connection.dispose();
        heartbeat.delete(connection);
        expiries.delete(connection);
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
      expiries.stop();
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
