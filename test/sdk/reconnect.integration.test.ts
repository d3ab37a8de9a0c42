import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import type { WebSocketFactory } from '../../client-sdk/index.js';
import { FaultInjector, on } from './faults.js';
import { cleanups, driverWithTour, openClient, sdkOptions } from './service.js';

/** From now: when the socket is back once it was down, and when nothing waits after that. */
function watch(client: Awaited<ReturnType<typeof openClient>>) {
  const seen = { down: false, connectedAt: 0, emptyAt: 0 };
  client.subscribe((status) => {
    if (!status.liveConnected) seen.down = true;
    else if (seen.down && !seen.connectedAt) seen.connectedAt = performance.now();
    if (seen.connectedAt && !seen.emptyAt && status.pendingCount === 0) seen.emptyAt = performance.now();
  });
  return seen;
}

describe.each(databaseKinds)('the moment the service is back, on %s', { timeout: 90_000 }, (kind) => {
  it('sends the waiting actions within a second of the socket being back, not after the backoff', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tourline-sdk-back-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const start = (env: Record<string, string>) =>
      kind === 'pglite' ? startTestServer(kind, { DATA_DIR: dataDir }, { ephemeral: false }) : startTestServer(kind, env);
    let server: TestServer = await start({});
    cleanups.push(() => server.close());
    const env: Record<string, string> = kind === 'pglite' ? {} : { DATABASE_URL: server.ctx.config.databaseUrl! };
    const { pnr, seeded } = await driverWithTour(server);
    const faults = new FaultInjector(server.url);
    // Backoff as an app has it: a push that failed a few times waits seconds for its next try.
    // No polling meanwhile: the socket's return is what tells the client.
    const client = await openClient(
      sdkOptions(() => server, pnr, faults, {
        webSocket: faults.webSocket,
        backoff: { baseMs: 1000, capMs: 20_000 },
        pollIntervalMs: 600_000,
      }),
    );
    await client.loadTours({ date: seeded.tour.tourDate });
    client.start();
    await vi.waitFor(() => expect(client.status().liveConnected).toBe(true), { timeout: 5000 });

    // Five pushes lost on the way while the socket stays up: the next try is 8 to 20 s away.
    faults.drop(on('/sync/push'), 5);
    const line = seeded.deliveries[0].items.find((i) => i.requiredQuantity === 3)!;
    await client.scan(line.id);
    await client.scan(line.id);
    await client.holdDelivery(seeded.deliveries[1].delivery.id, 'Tor zu');
    const dropped = () => faults.log.filter((l) => l.outcome === 'dropped').length;
    await vi.waitFor(() => expect(dropped()).toBe(5), { timeout: 30_000 });
    await vi.waitFor(() => expect(client.status().nextRetryAt).not.toBeNull());
    const nextRetryAt = client.status().nextRetryAt!;

    // The service stops and starts again.
    const seen = watch(client);
    const stoppedAt = performance.now();
    await server.close();
    server = await start(env);
    faults.target = server.url;
    await vi.waitFor(() => expect(seen.emptyAt).toBeGreaterThan(0), { timeout: 30_000 });
    const sentWithinMs = seen.emptyAt - seen.connectedAt;
    expect(sentWithinMs).toBeLessThan(1000);
    // Sent before the backoff was over: the socket's return sent it.
    const backoffLeftMs = nextRetryAt - Date.now();
    expect(backoffLeftMs).toBeGreaterThan(0);
    expect(client.status()).toMatchObject({ online: true, pendingCount: 0, rejected: [] });
    console.info(
      `socket back ${Math.round(seen.connectedAt - stoppedAt)} ms after the service stopped, waiting actions applied ` +
        `${Math.round(sentWithinMs)} ms after that, ${backoffLeftMs} ms before the push's backoff was over`,
    );
  });

  it('makes no request and opens no socket for 10 s after offline(), and catches up at once after online()', async () => {
    const server = await startTestServer(kind);
    cleanups.push(() => server.close());
    const { pnr, seeded } = await driverWithTour(server);
    const faults = new FaultInjector(server.url);
    let sockets = 0;
    const webSocket: WebSocketFactory = (url, protocols) => {
      sockets++;
      return faults.webSocket(url, protocols);
    };
    const client = await openClient(sdkOptions(() => server, pnr, faults, { webSocket, pollIntervalMs: 100 }));
    await client.loadTours({ date: seeded.tour.tourDate });
    client.start();
    await vi.waitFor(() => expect(client.status().liveConnected).toBe(true), { timeout: 5000 });

    client.offline();
    await client.holdDelivery(seeded.deliveries[1].delivery.id, 'Tor zu');
    const [requests, opened] = [faults.log.length, sockets];
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    expect([faults.log.length - requests, sockets - opened, faults.openSockets]).toEqual([0, 0, 0]);
    expect(client.status()).toMatchObject({ online: false, liveConnected: false, pendingCount: 1 });

    client.online();
    await vi.waitFor(() => expect(client.status()).toMatchObject({ online: true, liveConnected: true, pendingCount: 0 }), {
      timeout: 5000,
    });
  });
});
