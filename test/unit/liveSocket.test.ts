import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { LiveSocket, type SocketEvents } from '../bench/liveSocket.js';

/** The bench's minimal client against `ws`'s server, the one the service runs. */
describe("the live bench's WebSocket client", () => {
  let server: WebSocketServer | undefined;
  afterEach(async () => {
    for (const client of server?.clients ?? []) client.terminate();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
  });

  async function serve(): Promise<{ url: string; connected: Promise<{ ws: WebSocket; authorization?: string }> }> {
    server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((resolve) => server!.once('listening', resolve));
    const connected = new Promise<{ ws: WebSocket; authorization?: string }>((resolve) =>
      server!.once('connection', (ws, req) => resolve({ ws, authorization: req.headers.authorization })),
    );
    return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/sync/ws`, connected };
  }

  function recorder() {
    const messages: string[] = [];
    let closed: (code: number | undefined) => void = () => undefined;
    const closedCode = new Promise<number | undefined>((resolve) => (closed = resolve));
    const events: SocketEvents = { message: (text) => messages.push(text), close: (code) => closed(code), error: () => undefined };
    return { messages, closedCode, events };
  }

  const until = async (check: () => boolean) => {
    for (let waited = 0; !check(); waited += 10) {
      if (waited > 2000) throw new Error('not within 2 s');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  it('upgrades with its headers, sends masked text the server reads, and reads text of every length and in fragments', async () => {
    const { url, connected } = await serve();
    const { messages, events } = recorder();
    const socket = await LiveSocket.open(url, { Authorization: 'Bearer t' }, events);
    const { ws, authorization } = await connected;
    expect(authorization).toBe('Bearer t');
    const received = new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))));
    socket.send('{"type":"resume"}');
    expect(await received).toBe('{"type":"resume"}');
    const long = 'ä'.repeat(70_000);
    ws.send('short');
    ws.send('x'.repeat(300));
    ws.send(long);
    ws.send('first ', { fin: false });
    ws.send('second', { fin: true });
    await until(() => messages.length === 4);
    expect(messages).toEqual(['short', 'x'.repeat(300), long, 'first second']);
    socket.terminate();
  });

  it("answers the server's pings with their payload", async () => {
    const { url, connected } = await serve();
    await LiveSocket.open(url, {}, recorder().events);
    const { ws } = await connected;
    const pong = new Promise<string>((resolve) => ws.once('pong', (data) => resolve(String(data))));
    ws.ping('beat');
    expect(await pong).toBe('beat');
  });

  it("reports the server's close code", async () => {
    const { url, connected } = await serve();
    const { events, closedCode } = recorder();
    await LiveSocket.open(url, {}, events);
    (await connected).ws.close(4403, 'deactivated');
    expect(await closedCode).toBe(4403);
  });

  it('refuses an upgrade answered otherwise than 101', async () => {
    const refusing = http.createServer();
    refusing.on('upgrade', (_req, socket: Duplex) => socket.end('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n'));
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    try {
      const url = `ws://127.0.0.1:${(refusing.address() as AddressInfo).port}/sync/ws`;
      await expect(LiveSocket.open(url, {}, recorder().events)).rejects.toThrow('upgrade answered 401');
    } finally {
      refusing.close();
    }
  });
});
