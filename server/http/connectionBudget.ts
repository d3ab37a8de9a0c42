import { readFileSync } from 'node:fs';
import type http from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';

/** The share of the limit left to the files besides the connections: the pool, `LISTEN`, logs, documents on disk. */
const RESERVE_SHARE = 0.1;
/** Closing the idle connections walks all of them: at most this often. */
const SHED_EVERY_MS = 1000;
const LOG_EVERY_MS = 60_000;

/** The process's limit of open files (`ulimit -n`), read on Linux; undefined elsewhere or when unlimited. */
export function openFileLimit(limits = '/proc/self/limits'): number | undefined {
  try {
    const match = /^Max open files\s+(\d+)/m.exec(readFileSync(limits, 'latin1'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Keeps the connections below the process's limit of open files. Each holds a file descriptor:
 * a WebSocket for as long as it is open, an HTTP keep-alive connection until it has been idle for
 * the keep-alive timeout, which a phone pushing every half minute rarely reaches. A driver's
 * phone holds one of each, so 15,000 drivers hold about 30,000, more than many hosts allow a
 * process. At the limit the kernel's completed connections fail to be accepted and are reset:
 * new WebSockets and pushes fail while idle connections sit. So near the limit the connections
 * idle after an answer are closed (Node's `closeIdleConnections`: never a WebSocket, a request
 * in progress or a new connection whose first request is still on its way). Their clients open
 * a new connection for their next request, as after the keep-alive timeout.
 */
export function watchConnectionBudget(server: http.Server, options: { fileLimit: number | undefined; logger: Logger }) {
  const { fileLimit, logger } = options;
  if (fileLimit === undefined) return;
  const closeIdleAt = Math.floor(fileLimit * (1 - RESERVE_SHARE));
  let open = 0;
  let shedAt = -Infinity;
  let loggedAt = -Infinity;
  server.on('connection', (socket: Socket) => {
    open += 1;
    socket.once('close', () => (open -= 1));
    const now = performance.now();
    if (open < closeIdleAt || now - shedAt < SHED_EVERY_MS) return;
    shedAt = now;
    server.closeIdleConnections();
    if (now - loggedAt < LOG_EVERY_MS) return;
    loggedAt = now;
    logger.warn({ openConnections: open, fileLimit }, 'connections near the open-file limit: idle keep-alive connections closed');
  });
}
