import { randomUUID } from 'node:crypto';
import http from 'node:http';
import zlib from 'node:zlib';
import WebSocket from 'ws';
import { requestJson } from './http.js';
import { withServer, type BenchContext, type Metrics } from './context.js';
import { readTourPositions, seedReadTour } from './tourRead.js';
import { settle } from './seed.js';
import { round } from './stats.js';

/** The encodings a phone may accept: none, gzip, brotli. */
const encodings = { plain: 'identity', gzip: 'gzip', br: 'br' } as const;

/** A GET whose body stays as it crossed the wire (node:http leaves it compressed), and the process CPU it cost. */
async function fetchRaw(agent: http.Agent, url: string, token: string, acceptEncoding: string) {
  const cpu = process.cpuUsage();
  const { body, encoding } = await new Promise<{ body: Buffer; encoding?: string }>((resolve, reject) => {
    http
      .get(url, { agent, headers: { authorization: `Bearer ${token}`, 'accept-encoding': acceptEncoding } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve({ body: Buffer.concat(chunks), encoding: res.headers['content-encoding'] })
            : reject(new Error(`${url}: ${res.statusCode}`)),
        );
      })
      .on('error', reject);
  });
  const used = process.cpuUsage(cpu);
  const json = () =>
    JSON.parse((encoding === 'br' ? zlib.brotliDecompressSync(body) : encoding === 'gzip' ? zlib.gunzipSync(body) : body).toString('utf8'));
  return { bytes: body.length, cpuUs: used.user + used.system, json };
}

/** Reads a day's changes over /sync/ws from `cursor`; answers the bytes the socket read after the handshake. */
async function changesOverSocket(
  url: string,
  token: string,
  cursor: string,
  expected: number,
  perMessageDeflate: boolean,
): Promise<number> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/sync/ws`, { headers: { authorization: `Bearer ${token}` }, perMessageDeflate });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const socket = (ws as unknown as { _socket: { bytesRead: number } })._socket;
  const handshake = socket.bytesRead;
  let received = 0;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`ws: ${received} of ${expected} changes within 60 s`)), 60_000);
    ws.on('message', (data) => {
      received += (JSON.parse(data.toString()) as { changes?: unknown[] }).changes?.length ?? 0;
      if (received >= expected) {
        clearTimeout(timer);
        resolve();
      }
    });
    ws.send(JSON.stringify({ type: 'resume', cursor }));
  });
  const read = socket.bytesRead - handshake;
  ws.close();
  return read;
}

/**
 * Bytes on the wire for what a phone reads on a mobile network: its tour (`GET /tours/{id}`) and
 * a day's changes (every piece scanned, pulled over `/sync/changes` and sent over `/sync/ws`),
 * plain, gzip and brotli; and the process CPU per tour read in each encoding.
 */
export async function wire(ctx: BenchContext): Promise<Metrics> {
  const size = ctx.sizes.wire;
  const target = await ctx.newTarget('wire');
  return withServer(target, async (server) => {
    const { db } = server.ctx.database;
    const accountId = 81_001;
    const tour = await seedReadTour(db, accountId, size);
    await settle(db);
    const { accessToken: token } = await requestJson<{ accessToken: string }>('POST', `${server.url}/dev/token`, {
      admin: server.adminKey,
      body: { personalnummer: accountId },
    });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const results: Metrics = {};
    try {
      const tourUrl = `${server.url}/tours/${tour.tour.id}`;
      for (const [name, accept] of Object.entries(encodings)) {
        for (let i = 0; i < size.warmup; i++) await fetchRaw(agent, tourUrl, token, accept);
        let cpuUs = 0;
        for (let i = 0; i < size.iterations; i++) {
          const read = await fetchRaw(agent, tourUrl, token, accept);
          cpuUs += read.cpuUs;
          results[`tour_bytes_${name}`] = read.bytes;
        }
        results[`tour_cpu_us_${name}`] = Math.round(cpuUs / size.iterations);
      }

      // The day: every scannable piece scanned once, pushed 50 events at a time.
      const { cursor } = await requestJson<{ cursor: string }>('GET', `${server.url}/sync/cursor`, { token });
      const positions = readTourPositions(size.positions);
      const scans = tour.deliveries.flatMap((d) =>
        d.items.flatMap((item, i) =>
          positions[i].scannable
            ? Array.from({ length: positions[i].quantity }, () => ({
                eventId: randomUUID(),
                occurredAt: new Date().toISOString(),
                type: 'scan',
                deliveryItemId: item.id,
                action: 'scan',
              }))
            : [],
        ),
      );
      for (let i = 0; i < scans.length; i += 50) {
        await requestJson('POST', `${server.url}/sync/push`, { token, body: { clientId: 'bench-phone', events: scans.slice(i, i + 50) } });
      }
      let changes = 0;
      for (const [name, accept] of Object.entries(encodings)) {
        let bytes = 0;
        let since = cursor;
        for (;;) {
          const page = await fetchRaw(agent, `${server.url}/sync/changes?since=${encodeURIComponent(since)}&limit=1000`, token, accept);
          bytes += page.bytes;
          const body = page.json() as { changes: unknown[]; cursor: string; hasMore: boolean };
          if (name === 'plain') changes += body.changes.length;
          since = body.cursor;
          if (!body.hasMore) break;
        }
        results[`day_pull_bytes_${name}`] = bytes;
      }
      results.day_scans = scans.length;
      results.day_changes = changes;
      results.day_ws_bytes_plain = await changesOverSocket(server.url, token, cursor, changes, false);
      results.day_ws_bytes_deflate = await changesOverSocket(server.url, token, cursor, changes, true);
      results.tour_br_ratio = round(results.tour_bytes_br / results.tour_bytes_plain, 3);
      results.day_ws_deflate_ratio = round(results.day_ws_bytes_deflate / results.day_ws_bytes_plain, 3);
    } finally {
      agent.destroy();
    }
    return results;
  });
}
