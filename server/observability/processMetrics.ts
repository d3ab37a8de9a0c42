import { readdir } from 'node:fs/promises';
import { collectDefaultMetrics, Gauge, type Registry } from 'prom-client';

/**
 * prom-client's defaults that walk every handle or read /proc/self/fd on the event loop at each
 * scrape: with 15,000 sockets open a scrape held the loop 26–65 ms on an idle host, and every push
 * that arrived meanwhile waited (measured in 3e85a45).
 */
const WALKS_EVERY_SOCKET = [
  'nodejs_active_handles',
  'nodejs_active_handles_total',
  'nodejs_active_resources',
  'nodejs_active_resources_total',
  'process_open_fds',
];

/**
 * prom-client's default process metrics (CPU, memory, heap, GC, event-loop lag, the file
 * descriptor limit), less those that grow with the sockets. `process_open_fds` stays, read off the
 * event loop, as an instance's file descriptors are one of its limits; the per-type handle counts
 * go, as the open sockets are `tourline_websocket_clients`.
 */
export function processMetrics(registry: Registry) {
  collectDefaultMetrics({ register: registry });
  for (const name of WALKS_EVERY_SOCKET) registry.removeSingleMetric(name);
  if (process.platform !== 'linux') return;
  new Gauge({
    name: 'process_open_fds',
    help: 'Number of open file descriptors.',
    registers: [registry],
    async collect() {
      // One of the entries is the descriptor the listing itself had open.
      const entries = await readdir('/proc/self/fd').catch(() => undefined);
      if (entries) this.set(entries.length - 1);
    },
  });
}
