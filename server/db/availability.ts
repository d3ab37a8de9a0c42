import type { Logger } from 'pino';

/**
 * SQLSTATEs that mean "the database cannot serve this now, try again". Unreachable: connection
 * exceptions (class 08), admin or crash shutdown and "cannot connect now" (57P01-57P03). Busy,
 * while the database itself answers: too many connections, out of memory for one, and the lock
 * and statement timeouts we set (53300, 53400, 55P03, 57014).
 */
const busyStates = new Set(['53300', '53400', '55P03', '57014']);
const unreachableStates = new Set(['57P01', '57P02', '57P03']);
const unreachableNodeCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
// node-postgres and pg-pool say these in words only.
const unreachableMessages =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|not queryable|Connection ended/i;

export type DatabaseFault = 'unreachable' | 'busy';

/** Whether `error` (or an error it wraps, as drizzle does) is the database out of reach or too busy, rather than a bug. */
export function databaseFault(error: unknown): DatabaseFault | undefined {
  for (
    let e = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    if (e instanceof DatabaseUnavailable) return 'unreachable';
    const code = typeof e.code === 'string' ? e.code : '';
    if (busyStates.has(code)) return 'busy';
    if (code.startsWith('08') || unreachableStates.has(code) || unreachableNodeCodes.has(code)) return 'unreachable';
    if (typeof e.message === 'string' && unreachableMessages.test(e.message)) return 'unreachable';
  }
  return undefined;
}

export const isDatabaseUnavailable = (error: unknown) => databaseFault(error) !== undefined;

/** Thrown where we give up waiting on the database ourselves (the health check's own timeout). */
export class DatabaseUnavailable extends Error {}

/** How often, during an outage, the count of refused requests is logged. */
const COUNT_LOG_MS = 10_000;

/**
 * What this instance knows of its database: reachable or not, and whether the LISTEN connection
 * that carries other instances' changes is up. Readiness reads it; outages are logged here once
 * per change of state plus a count every ten seconds, never a stack per request.
 */
export class DatabaseHealth {
  reachable = true;
  listening = true;
  private downSince = 0;
  private refused = 0;
  private countLogged = 0;
  private listenerDownSince = 0;
  private probe: (() => Promise<void>) | undefined;
  private probing = false;

  constructor(private logger?: Logger) {}

  /** Where to log, and how to find out that the database is back (a cheap query). */
  attach(logger: Logger | undefined, probe: () => Promise<void>) {
    this.logger ??= logger;
    this.probe = probe;
  }

  /** Ready for traffic: the database answers. Live changes keep flowing without LISTEN (polled), so it is reported, not required. */
  get ready() {
    return this.reachable;
  }

  /** A request or job failed on the database (see `databaseFault`); only an unreachable one changes the state. */
  failed(error: unknown) {
    this.refused += 1;
    if (databaseFault(error) !== 'unreachable') return;
    const now = Date.now();
    if (this.reachable) {
      this.reachable = false;
      this.downSince = now;
      this.countLogged = now;
      this.logger?.warn({ reason: describe(error) }, 'database unavailable: answering 503 until it is back');
      void this.watch();
    } else if (now - this.countLogged >= COUNT_LOG_MS) {
      this.logger?.warn({ refused: this.refused, downForMs: now - this.downSince }, 'database still unavailable');
      this.countLogged = now;
    }
  }

  /** The database answered again. */
  recovered() {
    if (this.reachable) return;
    this.reachable = true;
    this.logger?.warn({ downForMs: Date.now() - this.downSince, refused: this.refused }, 'database reachable again');
    this.refused = 0;
  }

  listenerLost(error: unknown) {
    if (!this.listening) return;
    this.listening = false;
    this.listenerDownSince = Date.now();
    this.logger?.warn({ reason: describe(error) }, 'change listener (LISTEN) lost: reconnecting, live clients are polled meanwhile');
  }

  listenerBack() {
    if (this.listening) return;
    this.listening = true;
    this.logger?.warn({ downForMs: Date.now() - this.listenerDownSince }, 'change listener (LISTEN) back');
  }

  /** Probes once a second while the database is down, so that the state turns back without waiting for traffic. */
  private async watch() {
    if (this.probing || !this.probe) return;
    this.probing = true;
    try {
      while (!this.reachable) {
        await new Promise((resolve) => setTimeout(resolve, 1000).unref());
        try {
          await this.probe();
          this.recovered();
        } catch {
          /* still down */
        }
      }
    } finally {
      this.probing = false;
    }
  }
}

const describe = (error: unknown) => {
  const e = error as { code?: string; message?: string; cause?: { message?: string; code?: string } };
  return [e?.cause?.code ?? e?.code, e?.cause?.message ?? e?.message].filter(Boolean).join(' ');
};
