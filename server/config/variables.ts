import { z } from 'zod';
import { browsers, identity } from './access.js';
import { documents, erp } from './integrations.js';
import { isRelease } from '../../shared/rules/clientVersion.js';
import { httpUrl, postgresUrl } from './values.js';

/**
 * Every environment variable the service reads, by group, each with its meaning. `meta.derived`
 * names a default that loadConfig works out from other settings; `meta.range` words a range the
 * schema cannot show. docs/configuration.md and the README's short table are written from here
 * (`npm run docs:config`). The groups of who may call live in access.ts, the ERP and the document
 * store in integrations.ts.
 */

const service = z.object({
  NODE_ENV: z
    .enum(['development', 'production', 'test'])
    .default('development')
    .describe(
      'Production needs `OIDC_ISSUER`, `ADMIN_API_KEY`, `ERP_MODE` and `DOCUMENT_STORE`, refuses `AUTH_MODE=dev` and `ERP_MODE=demo`, and logs its settings in one line at start.',
    ),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000).describe('HTTP port (0 picks a free one).'),
  HOST: z.string().default('0.0.0.0').describe('Interface to listen on.'),
  DATA_DIR: z.string().default('./data').describe('PGlite database, development signing key, generated admin key, local documents.'),
  PUBLIC_URL: z
    .url()
    .optional()
    .meta({ description: 'Address clients use to reach the service; names the development issuer.', derived: 'the listening address' }),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('pino level of the JSON lines on standard output (docs/operations.md#logs).'),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(2 * 1024 * 1024)
    .describe('Largest JSON body (once inflated, when sent compressed); larger ones answer 413.'),
  UPLOAD_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(10 * 1024 * 1024)
    .describe('Largest multipart upload, all parts together (signatures, note images); larger ones answer 413.'),
  COMPANY_NAME: z.string().default('Tourline Demo GmbH').describe('Shown in the delivery report.'),
});

const database = z.object({
  DATABASE_URL: postgresUrl.meta({
    description: 'When set, PostgreSQL is used instead of PGlite in `DATA_DIR`. May be a pooler (PgBouncer, transaction mode).',
    range: '`postgres://` URL',
  }),
  DATABASE_DIRECT_URL: postgresUrl.meta({
    description:
      'A direct connection for migrations, `LISTEN` and session locks, beside a pooled `DATABASE_URL` (docs/operations.md#connections).',
    derived: '`DATABASE_URL`',
    range: '`postgres://` URL',
  }),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10).describe('Connections in the PostgreSQL pool of each instance.'),
  DATABASE_CONNECT_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(3000)
    .describe('Longest handshake of a new PostgreSQL connection; also how long `/health` waits for the database.'),
  DATABASE_POOL_WAIT_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(3000)
    .describe('Longest wait of a request for a pooled connection (refused connections are tried again meanwhile) before 503.'),
  DATABASE_STATEMENT_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(5000)
    .describe('`statement_timeout` of every pooled connection; the client gives up 1 s later on its own (a frozen database).'),
  DATABASE_LOCK_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(3000)
    .describe('`lock_timeout`: longest wait for a row lock before 503.'),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(10_000)
    .describe('`idle_in_transaction_session_timeout` of every pooled connection.'),
  DATABASE_START_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(0)
    .describe('How long the start keeps trying to reach the database (one line per try); `0`: for ever.'),
  DATABASE_MIGRATION_LOCK_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(600_000)
    .describe("Longest wait for another session's migration lock (start or `npm run migrate`); `0`: for ever."),
});

const sync = z.object({
  TOUR_CACHE_MB: z.coerce
    .number()
    .min(0)
    .default(64)
    .describe('Memory for tours as last answered by `GET /tours/{id}` (docs/erp-integration.md#reading-tours); `0` renders every read.'),
  CHANGE_LOG_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(1)
    .default(30)
    .describe('How long change-log entries are kept; older cursors are refused and the client resyncs (docs/sync-protocol.md).'),
  PROCESSED_EVENT_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(1)
    .default(90)
    .describe(
      'How long event ids are remembered for deduplication; an event that occurred earlier is refused (`event_too_old`). Longer than any phone stays offline; the same on every instance.',
    ),
  DEVICE_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(1)
    .default(30)
    .describe("How long a device's last health report is kept after it was last seen (`GET /admin/devices`, docs/operations.md)."),
  DEVICES_PER_ACCOUNT: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(100)
    .describe('Most devices whose reports are kept per account; a new one past it replaces the one seen longest ago that holds no work.'),
  WS_HEARTBEAT_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(3600)
    .default(30)
    .describe('Ping interval of `/sync/ws`; a connection that missed the last ping is closed.'),
  WS_MAX_BUFFERED_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024)
    .describe('A WebSocket client that lets more unsent data pile up is closed as too slow.'),
  CLIENT_MIN_VERSION: z.string().refine(isRelease, 'must be a release such as 0.2.0').default('0.1.0').meta({
    description:
      'The oldest SDK release served; an older app (its `Tourline-Client` header; none counts as 0.1.0) gets 426 `client_too_old` and keeps its outbox until updated (docs/sync-protocol.md#versions).',
    range: 'a release such as `0.2.0`',
  }),
});

const operations = z.object({
  METRICS_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .optional()
    .describe('Port of `GET /metrics` (Prometheus), served only there; unset: no metrics (docs/operations.md#metrics-and-alerts).'),
  READINESS_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(50)
    .max(60_000)
    .default(1000)
    .describe('How long `/readyz` waits for the database before it answers 503.'),
  // 5 s in production: time for the load balancer to see /readyz fail before sockets close.
  SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).max(600_000).optional().meta({
    description: 'After SIGTERM: how long the instance serves on while `/readyz` says 503, before it closes sockets and stops.',
    derived: '`5000` in production, else `0`',
  }),
  SHUTDOWN_WS_BATCH_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .default(200)
    .describe('WebSockets closed at once (code 1012) after the drain, 100 ms between batches.'),
  HEAP_GROWING_PERCENT: z.coerce
    .number()
    .int()
    .min(0)
    .max(1000)
    .default(300)
    .describe(
      "How far V8 lets the heap grow past what a full garbage collection left alive before the next one; `0`: V8's own choice. Fewer full collections, each of which marks every open socket, for more memory (docs/operations.md#memory-and-full-collections).",
    ),
});

/** The standard OpenTelemetry variables the service reads itself, before the rest (server/observability/tracingSettings.ts). */
export const tracingVariables = z.object({
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl.describe(
    'Where spans go (OTLP/HTTP), the full URL; tracing is off without this or `OTEL_EXPORTER_OTLP_ENDPOINT`.',
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl.describe("The collector's base URL; `/v1/traces` is added."),
  OTEL_TRACES_EXPORTER: z
    .enum(['otlp', 'none'], 'must be otlp or none')
    .default('otlp')
    .describe('`none` turns tracing off with an endpoint set.'),
  OTEL_SERVICE_NAME: z.string().min(1).default('tourline').describe('The service name on every span (docs/operations.md#traces).'),
});

/** The groups of docs/configuration.md, in its order. */
export const settingGroups = {
  Service: service,
  Database: database,
  'Identity and admin': identity,
  'Browsers and proxies': browsers,
  ERP: erp,
  Documents: documents,
  'Sync and retention': sync,
  'Probes, metrics, shutdown and memory': operations,
  Traces: tracingVariables,
};

/** The settings loadConfig reads (the tracing ones are read before it, at the very start). */
export const Variables = z.object({
  ...service.shape,
  ...database.shape,
  ...identity.shape,
  ...browsers.shape,
  ...erp.shape,
  ...documents.shape,
  ...sync.shape,
  ...operations.shape,
});

/** Secrets that may instead come from a file named by `<NAME>_FILE` (Docker and Kubernetes secrets). */
export const secretVariables = [
  'DATABASE_URL',
  'DATABASE_DIRECT_URL',
  'ADMIN_API_KEY',
  'DOCUMENT_STORE_TOKEN',
  'AWS_SECRET_ACCESS_KEY',
  'ERP_TOKEN',
  'ERP_PASSWORD',
  'ERP_OAUTH_CLIENT_SECRET',
] as const;

/** The names of every environment variable the service reads (docs/configuration.md documents each). */
export const configVariables = [
  ...Object.values(settingGroups).flatMap((group) => Object.keys(group.shape)),
  ...secretVariables.map((name) => `${name}_FILE`),
];
