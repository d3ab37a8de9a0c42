import http from 'node:http';
import type { Logger } from 'pino';
import type { Metrics } from '../../observability/metrics.js';
import { problemBody } from '../problem.js';

/**
 * `GET /metrics` in the Prometheus text format, on a port of its own (METRICS_PORT): the public
 * port never shows it, and the network decides who may scrape, as for any sidecar or exporter.
 */
export async function startMetricsServer(metrics: Metrics, port: number, host: string, logger: Logger): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      const body = JSON.stringify(problemBody('not_found', 'Only GET /metrics is served on this port'));
      res.writeHead(404, { 'content-type': 'application/problem+json' }).end(body);
      return;
    }
    metrics.registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(req.method === 'HEAD' ? undefined : text);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'collecting metrics failed');
        res
          .writeHead(500, { 'content-type': 'application/problem+json' })
          .end(JSON.stringify(problemBody('internal', 'Collecting metrics failed')));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
