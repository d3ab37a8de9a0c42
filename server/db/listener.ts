import pg from 'pg';
import type { DatabaseHealth } from './availability.js';
import { connectionConfig, type DatabaseTimeouts } from './postgres.js';

/** While LISTEN is down, how often listeners are told to re-read (live clients then miss nothing for longer). */
export const LISTENER_DOWN_POLL_MS = 1000;
// A frozen or silently dropped connection would stop the wake-ups for good: it is asked this often.
const HEARTBEAT_MS = 5000;

/**
 * LISTEN on a dedicated connection outside the pools (so that a pool behind PgBouncer does not
 * matter), kept up for as long as the service runs: it reconnects with a growing pause (up to 5 s)
 * when it drops, and meanwhile sends payload-less wake-ups every second, which make listeners
 * re-read what they may have missed. Its state goes to `health`, which logs loss and return.
 */
export async function listenPostgres(
  options: { url: string; timeouts: DatabaseTimeouts; health: DatabaseHealth },
  channel: string,
  onPayload: (payload: string) => void,
): Promise<() => Promise<void>> {
  const { health } = options;
  let client: pg.Client | undefined;
  let closed = false;
  let attempt = 0;
  let retry: NodeJS.Timeout | undefined;
  let poll: NodeJS.Timeout | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  const listen = `LISTEN ${pg.escapeIdentifier(channel)}`;

  const lost = (error: unknown) => {
    client = undefined;
    clearInterval(heartbeat);
    if (closed) return;
    health.listenerLost(error);
    poll ??= setInterval(() => onPayload(''), LISTENER_DOWN_POLL_MS).unref();
    clearTimeout(retry);
    retry = setTimeout(
      () => {
        void connect();
      },
      Math.min(250 * 2 ** attempt++, 5000),
    ).unref();
  };

  const connect = async () => {
    const c = new pg.Client({
      ...connectionConfig(options.url, options.timeouts),
      application_name: 'tourline listen',
      statement_timeout: undefined,
      lock_timeout: undefined,
    });
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      c.end().catch(() => undefined);
      if (client === c || !client) lost(error);
    };
    c.on('error', fail);
    c.on('end', () => fail(new Error('Connection ended')));
    c.on('notification', (n) => {
      if (n.channel === channel && n.payload !== undefined) onPayload(n.payload);
    });
    try {
      await c.connect();
      await c.query(listen);
    } catch (error) {
      fail(error);
      return;
    }
    if (closed) {
      await c.end().catch(() => undefined);
      return;
    }
    client = c;
    attempt = 0;
    clearInterval(poll);
    poll = undefined;
    health.listenerBack();
    // LISTEN again is a no-op that proves the connection alive (and keeps the session findable by its query).
    heartbeat = setInterval(() => {
      c.query(listen).catch(fail);
    }, HEARTBEAT_MS).unref();
    // Notifications sent while it was down are gone: a payload-less wake-up makes listeners re-read.
    onPayload('');
  };

  await connect();
  return async () => {
    closed = true;
    clearTimeout(retry);
    clearInterval(poll);
    clearInterval(heartbeat);
    await client?.end().catch(() => undefined);
  };
}
