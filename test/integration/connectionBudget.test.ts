import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openFileLimit } from '../../server/http/connectionBudget.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { SyncSocket } from '../helpers/wsClient.js';

/** A connection of the server's that the kernel has completed; nothing sent on it yet. */
function connect(url: string): Promise<net.Socket> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname).on('error', () => undefined);
  return new Promise((resolve) => socket.once('connect', () => resolve(socket)));
}

/** Sends `GET /livez` on the connection and answers the status line of its answer. */
function askLivez(socket: net.Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = '';
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
      if (answer.includes('\r\n\r\n')) resolve(answer.slice(0, 12));
    });
    socket.once('close', () => reject(new Error('closed before the answer')));
    socket.write('GET /livez HTTP/1.1\r\nHost: tourline\r\n\r\n');
  });
}

/** A keep-alive connection that has had one request answered and now waits, as a phone's between pushes. */
async function idleConnection(url: string): Promise<{ socket: net.Socket; closed: Promise<void> }> {
  const socket = await connect(url);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await askLivez(socket);
  expect(socket.destroyed).toBe(false);
  return { socket, closed };
}

const settled = (promise: Promise<void>, ms: number) =>
  Promise.race([promise.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);

describe('connections near the open-file limit', () => {
  // 90 % of 40: the 36th open connection makes room.
  const fileLimit = 40;
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('pglite', {}, { openFileLimit: fileLimit });
  });
  afterAll(() => server?.close());

  it('closes the idle keep-alive connections, and keeps the WebSockets and the requests in progress', async () => {
    const token = await server.token(4711);
    const socket = await SyncSocket.open(server.url, { token });
    socket.send({ type: 'resume', cursor: (await server.get('/sync/cursor', { token })).body.cursor });
    await socket.next((m) => m.type === 'changes');

    const idle = [];
    for (let i = 0; i < 20; i++) idle.push(await idleConnection(server.url));
    // Below the mark nothing is closed.
    expect(await settled(idle[0].closed, 200)).toBe(false);

    // A new connection whose request has not come yet is not idle: it is answered.
    const newcomers = await Promise.all(Array.from({ length: 20 }, () => connect(server.url)));
    for (const { closed } of idle) expect(await settled(closed, 2000)).toBe(true);
    const answers = await Promise.all(newcomers.map(askLivez));
    expect(answers).toEqual(newcomers.map(() => 'HTTP/1.1 200'));
    for (const c of newcomers) c.destroy();

    // The WebSocket stayed open and is served.
    socket.send({ type: 'ping' });
    await socket.next((m) => m.type === 'pong');
    expect((await server.get('/livez')).status).toBe(200);
    await socket.close();
  });
});

describe('the open-file limit', () => {
  const limits = (text: string) => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'limits-')), 'limits');
    writeFileSync(file, text);
    return file;
  };
  const header = 'Limit                     Soft Limit           Hard Limit           Units     \n';

  it('is the soft limit of open files', () => {
    const file = limits(
      `${header}Max cpu time              unlimited            unlimited            seconds   \nMax open files            20000                1048576              files     \n`,
    );
    expect(openFileLimit(file)).toBe(20000);
  });

  it('is unknown when unlimited, missing or unreadable', () => {
    expect(
      openFileLimit(limits(`${header}Max open files            unlimited            unlimited            files     \n`)),
    ).toBeUndefined();
    expect(openFileLimit(limits(header))).toBeUndefined();
    expect(openFileLimit('/nonexistent/limits')).toBeUndefined();
  });

  it.runIf(process.platform === 'linux')('is read from this process on Linux', () => {
    expect(openFileLimit()).toBeGreaterThan(0);
  });
});
