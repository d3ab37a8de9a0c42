import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An ERP over HTTP on a port of its own, for a service started in production (which refuses the
 * demo ERP): it answers each day with `tours(date)` and accepts every completion write-back.
 */
export async function startErpServer(tours: (date: string) => unknown[] = () => []) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://erp');
    const date = url.searchParams.get('date');
    if (req.method === 'GET' && url.pathname === '/tours' && date) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ tours: tours(date) }));
    } else if (req.method === 'POST' && /^\/documents\/\d+\/[^/]+\/completion$/.test(url.pathname)) {
      req.resume().once('end', () => res.writeHead(204).end());
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
