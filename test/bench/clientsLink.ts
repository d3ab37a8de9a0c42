/**
 * One client's network to the service: a TCP relay that counts the bytes the client sends and
 * receives, and a fetch over it that counts requests and can be cut off ("no network": it fails
 * as fetch does when the host is unreachable, without sending anything).
 */
import net from 'node:net';

export interface Link {
  /** The service's address as this client reaches it. */
  baseUrl: string;
  up: boolean;
  fetch: typeof fetch;
  counters: { requests: number; bytesSent: number; bytesReceived: number };
  /** When the first request that carries queued actions went out (performance.now()), since `resetFirstSend`. */
  firstSendAt?: number;
  resetFirstSend(): void;
  close(): Promise<void>;
}

/** Requests that carry a driver's actions, not reads. */
const sendsActions = (path: string) => path === '/sync/push' || path.endsWith('/notes/image') || path.endsWith('/complete');

export async function openLink(serviceUrl: string): Promise<Link> {
  const service = new URL(serviceUrl);
  const sockets = new Set<net.Socket>();
  const counters = { requests: 0, bytesSent: 0, bytesReceived: 0 };
  const relay = net.createServer((client) => {
    const upstream = net.connect({ host: service.hostname, port: Number(service.port) });
    sockets.add(client).add(upstream);
    client.on('data', (chunk: Buffer) => (counters.bytesSent += chunk.length));
    upstream.on('data', (chunk: Buffer) => (counters.bytesReceived += chunk.length));
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const { port } = relay.address() as net.AddressInfo;
  const link: Link = {
    baseUrl: `http://127.0.0.1:${port}`,
    up: true,
    counters,
    resetFirstSend: () => (link.firstSendAt = undefined),
    fetch: async (input, init) => {
      if (!link.up) throw new TypeError('fetch failed', { cause: new Error('connect ENETUNREACH') });
      const url = new URL(input instanceof Request ? input.url : String(input));
      counters.requests++;
      if (link.firstSendAt === undefined && sendsActions(url.pathname)) link.firstSendAt = performance.now();
      return fetch(input, init);
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    },
  };
  return link;
}
