import { WebSocket } from 'ws';
import { newId } from '../../shared/ids.js';
import { request, requestJson } from './http.js';
import type { FanoutJob, Measured, ScanEvent } from './jobs.js';
import { monotonicMs, sleep } from './stats.js';

/**
 * Many live clients, a steady stream of small commits. Every account has `clientsPerAccount`
 * connections (devices sharing an account); each commit is one pushed scan for one account,
 * and each of that account's connections measures from the moment the write was sent (so
 * the figure includes the write itself) to the moment its change arrives.
 */
export async function runFanout(job: FanoutJob): Promise<Measured> {
  const out: Measured = { latencies: [], count: 0, requests: 0, elapsedMs: 0, errors: [] };
  const wsUrl = job.url.replace(/^http/, 'ws') + '/sync/ws';
  const { cursor } = await requestJson<{ cursor: string }>('GET', `${job.url}/sync/cursor`, { token: job.accounts[0].token });
  // Sent-at of the writes per account whose change has not arrived at every connection yet.
  const pending = job.accounts.map(() => new Map<string, { sentAt: number; missing: number }>());
  const sockets: WebSocket[] = [];
  let expected = 0;

  const open = (account: number) =>
    new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${job.accounts[account].token}` }, perMessageDeflate: false });
      let ready = false;
      ws.on('open', () => ws.send(JSON.stringify({ type: 'resume', cursor })));
      ws.on('message', (data) => {
        const now = monotonicMs();
        const message = JSON.parse(data.toString()) as { type: string; changes?: { entity: string; id: string }[] };
        if (message.type !== 'changes') return;
        if (!ready) {
          ready = true;
          resolve();
        }
        for (const change of message.changes ?? []) {
          if (change.entity !== 'position') continue;
          const write = pending[account].get(change.id);
          if (!write) continue;
          out.latencies.push(now - write.sentAt);
          out.count += 1;
          if (--write.missing === 0) pending[account].delete(change.id);
        }
      });
      ws.on('error', (error) => (ready ? out.errors.length < 5 && out.errors.push(String(error)) : reject(error)));
      ws.on('close', (code) => {
        if (code !== 1000 && code !== 1001 && out.errors.length < 5) out.errors.push(`closed ${code}`);
      });
      sockets.push(ws);
    });

  // Connect in waves, so the upgrade (token check) of a thousand clients does not time out.
  const connectStart = monotonicMs();
  for (let first = 0; first < job.accounts.length * job.clientsPerAccount; first += 50) {
    await Promise.all(
      Array.from({ length: 50 }, (_, i) => first + i)
        .filter((n) => n < job.accounts.length * job.clientsPerAccount)
        .map((n) => open(n % job.accounts.length)),
    );
  }
  const connectMs = monotonicMs() - connectStart;

  const started = monotonicMs();
  const interval = 1000 / job.commitsPerSecond;
  const writes: Promise<void>[] = [];
  for (let n = 0; monotonicMs() - started < job.durationMs; n++) {
    const account = n % job.accounts.length;
    const { token, itemId } = job.accounts[account];
    // An item is written again only after its last change arrived everywhere, so receipts match writes.
    if (!pending[account].has(itemId)) {
      pending[account].set(itemId, { sentAt: monotonicMs(), missing: job.clientsPerAccount });
      expected += job.clientsPerAccount;
      const event: ScanEvent = {
        eventId: newId(), // as the SDK makes them: time-ordered
        occurredAt: new Date().toISOString(),
        type: 'scan',
        deliveryItemId: itemId,
        action: 'scan',
      };
      writes.push(
        request('POST', `${job.url}/sync/push`, { token, body: { clientId: 'bench-fanout', events: [event] } }).then((reply) => {
          out.requests += 1;
          if (reply.status !== 200 && out.errors.length < 5) out.errors.push(`${reply.status} ${reply.text.slice(0, 200)}`);
        }),
      );
    }
    const due = started + (n + 1) * interval;
    await sleep(Math.max(0, due - monotonicMs()));
  }
  await Promise.all(writes);
  // Late receipts count (with their real latency) for up to two seconds.
  for (let waited = 0; waited < 2000 && pending.some((p) => p.size > 0); waited += 50) await sleep(50);
  out.elapsedMs = monotonicMs() - started;
  out.extra = {
    expected,
    connect_ms: connectMs,
    missing: pending.reduce((n, p) => n + [...p.values()].reduce((m, w) => m + w.missing, 0), 0),
  };
  for (const ws of sockets) ws.terminate();
  return out;
}
