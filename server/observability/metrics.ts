import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EventResult, SyncEvent } from '../../shared/schemas/sync.js';
import type { WriteTiming } from '../engine/apply.js';
import type { Db } from '../db/client.js';
import { changeLogHead, erpWriteBackBacklog, importRunsByResult } from '../queries/serviceState.js';
import { deviceMetrics } from './deviceMetrics.js';
import { processMetrics } from './processMetrics.js';

/** What the gauges read at scrape time; known only once the service is built. */
export interface MetricSources {
  db: Db;
  /** Open sync WebSockets, and the lowest seq a resumed one has been sent (undefined: none resumed). */
  webSockets(): { clients: number; slowestSeq: number | undefined };
  /** The PostgreSQL pool; undefined on PGlite (one connection in process). */
  pool(): { total: number; idle: number; waiting: number } | undefined;
  onError(error: unknown): void;
}

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * The Prometheus metrics of one service instance, in a registry of its own (tests run several
 * instances in one process). Counters and the latency histogram count in process; the gauges
 * read their sources when scraped. Database-derived gauges (write-back backlog, import runs)
 * count over all instances: aggregate them with max, not sum.
 */
export function createMetrics() {
  const registry = new Registry();
  const registers = [registry];
  const requestDuration = new Histogram({
    name: 'tourline_http_request_duration_seconds',
    help: 'HTTP request latency by route template, method and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const events = new Counter({
    name: 'tourline_events_total',
    help: 'Events decided by the engine (push, REST operations) by type, result (applied, duplicate, refused) and refusal code',
    labelNames: ['type', 'result', 'code'],
    registers,
  });
  // A push's time in the engine: its wait for the writer, then the run it goes in. A wait that
  // grows while the runs stay short means the writer is the queue; runs that grow, the database.
  const engineBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
  const writeWait = new Histogram({
    name: 'tourline_engine_write_wait_seconds',
    help: "Time a request's events waited for the engine's writer",
    buckets: engineBuckets,
    registers,
  });
  const writeRun = new Histogram({
    name: 'tourline_engine_write_seconds',
    help: "Duration of the writer's run (one transaction, with the requests combined in it) that wrote a request's events",
    buckets: engineBuckets,
    registers,
  });
  let watching = false;

  return {
    registry,
    observeRequest(method: string, route: string, status: number, seconds: number) {
      requestDuration.observe({ method, route, status: String(status) }, seconds);
    },
    /** The engine's hooks (`ApplyOptions`): every event's result, every request's write. */
    engine: {
      onResult(event: SyncEvent, result: Pick<EventResult, 'status' | 'code'> & { reason?: string }) {
        const refused = result.status === 'rejected';
        events.inc({
          type: event.type,
          result: refused ? 'refused' : result.status,
          code: refused ? (result.reason ?? result.code ?? '') : '',
        });
      },
      onWrite({ waited, ran }: WriteTiming) {
        writeWait.observe(waited);
        writeRun.observe(ran);
      },
    },
    /** Registers the gauges and the process metrics; called once, when the metrics endpoint starts. */
    watch(sources: MetricSources) {
      if (watching) return;
      watching = true;
      processMetrics(registry);
      const guarded = (collect: (this: Gauge) => Promise<void> | void) =>
        async function (this: Gauge) {
          // A scrape during a database outage still answers; the gauge keeps its last value.
          try {
            await collect.call(this);
          } catch (error) {
            sources.onError(error);
          }
        };
      new Gauge({
        name: 'tourline_websocket_clients',
        help: 'Open sync WebSockets',
        registers,
        collect: guarded(function (this: Gauge) {
          this.set(sources.webSockets().clients);
        }),
      });
      new Gauge({
        name: 'tourline_db_pool_connections_in_use',
        help: 'PostgreSQL pool connections checked out',
        registers,
        collect: guarded(function (this: Gauge) {
          const p = sources.pool();
          this.set(p ? p.total - p.idle : 0);
        }),
      });
      new Gauge({
        name: 'tourline_db_pool_waiting',
        help: 'Requests waiting for a PostgreSQL pool connection',
        registers,
        collect: guarded(function (this: Gauge) {
          this.set(sources.pool()?.waiting ?? 0);
        }),
      });
      new Gauge({
        name: 'tourline_change_log_lag',
        help: 'Change-log head seq minus the lowest seq sent to a live WebSocket of this instance (0 without one)',
        registers,
        collect: guarded(async function (this: Gauge) {
          const { slowestSeq } = sources.webSockets();
          this.set(slowestSeq === undefined ? 0 : Math.max(0, (await changeLogHead(sources.db)) - slowestSeq));
        }),
      });
      // Counts of the whole installation by one label, read from the database at scrape time; a value without rows is 0.
      const countsBy = (name: string, help: string, label: string, values: string[], read: () => Promise<Record<string, unknown>[]>) =>
        new Gauge({
          name,
          help,
          labelNames: [label],
          registers,
          collect: guarded(async function (this: Gauge) {
            const rows = await read();
            this.reset();
            for (const value of values) this.set({ [label]: value }, Number(rows.find((r) => r[label] === value)?.count ?? 0));
          }),
        });
      countsBy(
        'tourline_erp_writeback_backlog',
        'Completions whose ERP write-back is not done, by status (pending, failed, rejected); all instances',
        'status',
        ['pending', 'failed', 'rejected'],
        () => erpWriteBackBacklog(sources.db),
      );
      countsBy(
        'tourline_erp_import_runs',
        'Logged ERP import runs by result (succeeded, failed, skipped, running); all instances',
        'result',
        ['succeeded', 'failed', 'skipped', 'running'],
        () => importRunsByResult(sources.db),
      );
      deviceMetrics(registry, sources.db, guarded);
    },
  };
}
