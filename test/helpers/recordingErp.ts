import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the ERP received. */
export interface ErpCall {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
  at: number;
}

export interface ErpAnswer {
  status: number;
  body?: unknown;
  /** Answers this much later (a slow ERP). */
  delayMs?: number;
}

/**
 * An ERP over real HTTP on a port of its own that records every call. `answer` decides each
 * write-back's answer (204 by default), `tours` each day's; `down()` closes the port and `up()`
 * opens it again on the same address.
 */
export async function startRecordingErp(
  options: { tours?: (date: string) => unknown[]; answer?: (call: ErpCall) => ErpAnswer | Promise<ErpAnswer> } = {},
) {
  const calls: ErpCall[] = [];
  const state: {
    tours: (date: string) => unknown[];
    answer: (call: ErpCall) => ErpAnswer | Promise<ErpAnswer>;
    /** Whether the call's credentials let it in; 401 when not (every caller by default). */
    authorize: (call: ErpCall) => boolean | Promise<boolean>;
  } = {
    tours: options.tours ?? (() => []),
    answer: options.answer ?? (() => ({ status: 204 })),
    authorize: () => true,
  };
  const handler: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const url = new URL(req.url ?? '/', 'http://erp');
      const text = Buffer.concat(chunks).toString('utf8');
      const call: ErpCall = {
        method: req.method ?? '',
        path: url.pathname,
        headers: req.headers,
        body: text ? JSON.parse(text) : undefined,
        at: Date.now(),
      };
      calls.push(call);
      const date = url.searchParams.get('date');
      const answer: ErpAnswer = !(await state.authorize(call))
        ? { status: 401 }
        : req.method === 'GET' && url.pathname === '/tours' && date
          ? { status: 200, body: { tours: state.tours(date) } }
          : await state.answer(call);
      setTimeout(() => {
        if (res.destroyed) return;
        if (answer.body === undefined) res.writeHead(answer.status).end();
        else res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
      }, answer.delayMs ?? 0);
    });
  };
  let server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const close = () =>
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve();
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    state,
    /** The write-backs received (not the tour reads). */
    writeBacks: () => calls.filter((c) => c.method === 'POST'),
    down: close,
    async up() {
      server = http.createServer(handler);
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
    close,
  };
}
