import WebSocket from 'ws';
import type { FetchLike } from '../../client-sdk/api.js';
import type { WebSocketFactory } from '../../client-sdk/live.js';

/** The address the SDK talks to; the injector forwards it to whichever server runs now. */
export const SDK_BASE_URL = 'http://tourline.test';

type Match = (method: string, path: string) => boolean;
export const on =
  (pathPart: string, method?: string): Match =>
  (m, p) =>
    p.includes(pathPart) && (!method || m === method);

/**
 * Sits between the SDK and the service: forwards to the current server and, on request, drops
 * requests before they reach it, loses answers after the server committed, goes offline
 * altogether, and cuts WebSockets.
 */
export class FaultInjector {
  offline = false;
  readonly log: { method: string; path: string; outcome: 'sent' | 'dropped' | 'lost' | 'offline'; status?: number }[] = [];
  private drops: { match: Match; left: number }[] = [];
  private losses: { match: Match; left: number }[] = [];
  private readonly sockets = new Set<WebSocket>();

  constructor(public target: string) {}

  /** The next `count` matching requests never reach the server. */
  drop(match: Match, count = 1) {
    this.drops.push({ match, left: count });
  }
  /** The next `count` matching requests reach the server, which commits; the answer is lost on the way back. */
  loseResponse(match: Match, count = 1) {
    this.losses.push({ match, left: count });
  }

  private take(list: { match: Match; left: number }[], method: string, path: string) {
    const rule = list.find((r) => r.left > 0 && r.match(method, path));
    if (rule) rule.left--;
    return !!rule;
  }

  readonly fetch: FetchLike = async (input, init) => {
    const url = new URL(input);
    const method = init.method ?? 'GET';
    if (this.offline) {
      this.log.push({ method, path: url.pathname, outcome: 'offline' });
      throw new TypeError('fetch failed: network is unreachable');
    }
    if (this.take(this.drops, method, url.pathname)) {
      this.log.push({ method, path: url.pathname, outcome: 'dropped' });
      throw new TypeError('fetch failed: connection reset');
    }
    const response = await fetch(`${this.target}${url.pathname}${url.search}`, init);
    if (this.take(this.losses, method, url.pathname)) {
      await response.arrayBuffer();
      this.log.push({ method, path: url.pathname, outcome: 'lost', status: response.status });
      throw new TypeError('fetch failed: socket hang up');
    }
    this.log.push({ method, path: url.pathname, outcome: 'sent', status: response.status });
    return response;
  };

  readonly webSocket: WebSocketFactory = (url, protocols) => {
    if (this.offline) {
      const dead = new WebSocket('ws://127.0.0.1:1/', protocols);
      dead.on('error', () => undefined);
      return dead;
    }
    const target = new URL(url);
    const socket = new WebSocket(`${this.target.replace(/^http/, 'ws')}${target.pathname}`, protocols);
    socket.on('error', () => undefined);
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    return socket;
  };

  /** Kills every open socket without a closing handshake, as a lost network does. */
  cutSockets() {
    for (const socket of this.sockets) socket.terminate();
    this.sockets.clear();
  }

  get openSockets() {
    return [...this.sockets].filter((s) => s.readyState === WebSocket.OPEN).length;
  }
}
