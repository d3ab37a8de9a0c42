import { WebSocket } from 'ws';
import type { FetchLike, WebSocketFactory } from '../../client-sdk/index.js';
import type { Instance } from './chaosInstance.js';

/** The instance a driver whose home is instance `home` talks to now. */
export type Route = (home: number) => Instance;

/** Whether to inject a fault of probability p now, and how many of each were injected. */
export interface NetworkFaults {
  chance(p: number): boolean;
  counts: { dropped: number; lost: number; duplicated: number };
}

/** A fetch through the driver's instance that drops requests, loses answers and sends pushes twice. */
export function faultyFetch(route: Route, home: number, faults: NetworkFaults): FetchLike {
  const { chance, counts } = faults;
  return async (input, init) => {
    const url = new URL(input);
    const target = route(home).url;
    if (chance(0.03)) {
      counts.dropped += 1;
      throw new TypeError('fetch failed: connection reset (injected)');
    }
    const method = init.method ?? 'GET';
    let copy: Promise<unknown> | undefined;
    if (method === 'POST' && url.pathname === '/sync/push' && chance(0.05)) {
      // The same push through the other instance at the same moment.
      counts.duplicated += 1;
      copy = fetch(`${route(1 - home).url}${url.pathname}`, init)
        .then((r) => r.arrayBuffer())
        .catch(() => undefined);
    }
    const response = await fetch(`${target}${url.pathname}${url.search}`, init);
    await copy;
    if (chance(0.03)) {
      await response.arrayBuffer();
      counts.lost += 1;
      throw new TypeError('fetch failed: socket hang up after the server answered (injected)');
    }
    return response;
  };
}

/** WebSockets to the driver's instance, kept in `sockets` so that the run can cut them. */
export function socketFactory(route: Route, home: number, sockets: Set<WebSocket>): WebSocketFactory {
  return (url, protocols) => {
    const socket = new WebSocket(`${route(home).url.replace(/^http/, 'ws')}${new URL(url).pathname}`, protocols);
    socket.on('error', () => undefined);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    return socket;
  };
}
