/**
 * A reference ERP gateway: the ERP's side of docs/erp-integration.md, small enough to read in one
 * sitting. It answers `GET /tours?date=` with the tours of `day.json` (dated to the day asked
 * for), takes completion and cancellation write-backs, deduplicates them by `Idempotency-Key`,
 * and shows what it received at `GET /received`. It keeps everything in memory.
 *
 *   ERP_GATEWAY_PORT=4100 ERP_GATEWAY_TOKEN=s3cret npx tsx examples/erp-gateway/gateway.ts
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

interface Tour {
  tourDate: string;
  deliveries: { belegartId: number; belegnummer: string }[];
}

/** What one write-back did: applied once, whatever number of copies arrived. */
interface Applied {
  kind: 'completion' | 'cancellation';
  belegartId: number;
  belegnummer: string;
  idempotencyKey: string;
  body: Record<string, unknown>;
  copies: number;
}

export interface GatewayOptions {
  /** The bearer token Tourline must send (ERP_TOKEN there); none: every caller is let in. */
  token?: string;
  /** The day's answer; `day.json` beside this file by default. */
  day?: { tours: Tour[] };
}

const DOCUMENT_PATH = /^\/documents\/(\d+)\/([^/]+)\/(completion|cancellation)$/;

export function createGateway(options: GatewayOptions = {}) {
  const day = options.day ?? (JSON.parse(readFileSync(new URL('./day.json', import.meta.url), 'utf8')) as { tours: Tour[] });
  const applied = new Map<string, Applied>();
  const documents = new Map<string, string>();
  for (const tour of day.tours) for (const d of tour.deliveries) documents.set(`${d.belegartId}/${d.belegnummer}`, 'open');

  function answer(res: http.ServerResponse, status: number, body?: unknown) {
    if (body === undefined) res.writeHead(status).end();
    else res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  function writeBack(req: http.IncomingMessage, res: http.ServerResponse, match: RegExpMatchArray, text: string) {
    const [, belegartId, encodedNumber, kind] = match;
    const belegnummer = decodeURIComponent(encodedNumber);
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || !key) return answer(res, 400, { error: 'Idempotency-Key missing' });
    // A copy of a write-back already applied: the same answer, nothing applied again.
    const seen = applied.get(key);
    if (seen) {
      seen.copies += 1;
      return answer(res, 200, { status: 'already applied' });
    }
    if (!(req.headers['content-type'] ?? '').startsWith('application/json'))
      return answer(res, 415, { error: 'expected application/json' });
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return answer(res, 400, { error: 'body is not JSON' });
    }
    const document = `${belegartId}/${belegnummer}`;
    const state = documents.get(document);
    if (!state) return answer(res, 404, { error: `document ${document} unknown` });
    if (state !== 'open') return answer(res, 409, { error: `document ${document} is already ${state}` });
    documents.set(document, kind === 'completion' ? 'completed' : 'canceled');
    applied.set(key, { kind: kind as Applied['kind'], belegartId: Number(belegartId), belegnummer, idempotencyKey: key, body, copies: 1 });
    return answer(res, 200, { status: 'applied' });
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://gateway');
      if (options.token && req.headers.authorization !== `Bearer ${options.token}`) return answer(res, 401, { error: 'unauthorized' });
      const date = url.searchParams.get('date');
      if (req.method === 'GET' && url.pathname === '/tours' && date && /^\d{4}-\d{2}-\d{2}$/.test(date))
        return answer(res, 200, { tours: day.tours.map((tour) => ({ ...tour, tourDate: date })) });
      if (req.method === 'GET' && url.pathname === '/received') return answer(res, 200, { writeBacks: [...applied.values()] });
      const match = url.pathname.match(DOCUMENT_PATH);
      if (req.method === 'POST' && match) return writeBack(req, res, match, Buffer.concat(chunks).toString('utf8'));
      return answer(res, 404, { error: 'no such endpoint' });
    });
  });

  return {
    server,
    applied,
    async listen(port = 0, host = '127.0.0.1') {
      await new Promise<void>((resolve) => server.listen(port, host, resolve));
      return `http://${host}:${(server.address() as AddressInfo).port}`;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

// Started as a program (not imported by a test): listen until stopped.
if (import.meta.url === `file://${process.argv[1]}`) {
  const gateway = createGateway({ token: process.env.ERP_GATEWAY_TOKEN });
  const url = await gateway.listen(Number(process.env.ERP_GATEWAY_PORT ?? 4100), process.env.ERP_GATEWAY_HOST ?? '127.0.0.1');
  console.log(`reference ERP gateway at ${url}`);
}
