import { describe, expect, it } from 'vitest';
import { databaseKinds } from '../helpers/databases.js';
import { startTestServer, useTestServer, type TestServer } from '../helpers/server.js';
import { tourPayload } from '../helpers/tourPayloads.js';
import { SyncSocket } from '../helpers/wsClient.js';

let nextAccount = 7700;

async function resumed(api: TestServer, token: string) {
  const socket = await SyncSocket.open(api.url, { token });
  socket.send({ type: 'resume', cursor: null });
  await socket.next((m) => m.type === 'changes');
  return socket;
}

describe.each(databaseKinds)("a deactivated account's WebSocket on %s", (kind) => {
  const api = useTestServer(kind);

  it("is closed with 4403 within seconds of the sync that deactivates the account; other accounts' stay open", async () => {
    const [gone, staying] = [nextAccount++, nextAccount++];
    const goneSocket = await resumed(api, await api.token(gone));
    const stayingSocket = await resumed(api, await api.token(staying));
    const started = Date.now();
    const off = { ...tourPayload(gone, { deliveries: 0 }), driver: { personalnummer: gone, name: `Fahrer ${gone}`, active: false } };
    expect((await api.post('/sync/tour', off, { admin: true })).status).toBe(200);

    const closed = await goneSocket.closed;
    expect(closed.code).toBe(4403);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(stayingSocket.ws.readyState).toBe(stayingSocket.ws.OPEN);
    await stayingSocket.close();
  });

  it('is closed with 4403 by the periodic check when the account went inactive without an announcement; active accounts stay', async () => {
    const fast = await startTestServer(kind, { WS_HEARTBEAT_SECONDS: '1' });
    try {
      const personalnummer = nextAccount++;
      const socket = await resumed(fast, await fast.token(personalnummer));
      const active = await resumed(fast, await fast.token(nextAccount++));
      await fast.seedAccount(personalnummer, `Fahrer ${personalnummer}`, false);
      const started = Date.now();
      expect((await socket.closed).code).toBe(4403);
      expect(Date.now() - started).toBeLessThan(4000);
      // Two more rounds of the check: the active account's socket is still open.
      await new Promise((resolve) => setTimeout(resolve, 2500));
      expect(active.ws.readyState).toBe(active.ws.OPEN);
    } finally {
      await fast.close();
    }
  }, 90_000); // a server of its own starts slowly on a busy machine
});
