import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Opens `count` connections from a worker thread while this thread, which runs the service, is
 * blocked: the kernel completes each handshake only while the listen backlog has room, and
 * answers the others' SYNs not at all (they try again after a second). Answers how many were
 * connected within `windowMs`.
 */
function connectWhileBlocked(port: number, count: number, windowMs: number): number {
  const shared = new Int32Array(new SharedArrayBuffer(8));
  const worker = new Worker(
    `const net = require('node:net');
    const { workerData: { port, count, windowMs, shared } } = require('node:worker_threads');
    const sockets = [];
    let connected = 0;
    for (let i = 0; i < count; i++) {
      const socket = net.connect(port, '127.0.0.1', () => { connected += 1; });
      socket.on('error', () => undefined);
      sockets.push(socket);
    }
    setTimeout(() => {
      Atomics.store(shared, 1, connected);
      Atomics.store(shared, 0, 1);
      Atomics.notify(shared, 0);
      for (const socket of sockets) socket.destroy();
    }, windowMs);`,
    { eval: true, workerData: { port, count, windowMs, shared } },
  );
  // The service's event loop takes no connection until the worker has counted.
  Atomics.wait(shared, 0, 0, windowMs + 10_000);
  void worker.terminate();
  return Atomics.load(shared, 1);
}

describe('listen backlog', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('pglite');
  });
  afterAll(() => server?.close());

  it('takes 1,500 connections opened at once while its event loop is busy, beyond the default backlog of 511', async () => {
    const port = Number(new URL(server.url).port);
    expect(connectWhileBlocked(port, 1500, 1000)).toBe(1500);
    // The service goes on answering once its loop is free again.
    expect((await server.request('GET', '/livez')).status).toBe(200);
  });
});
