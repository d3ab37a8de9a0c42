import { z } from 'zod';

/**
 * Every environment variable the service reads, by group, each with its meaning. `meta.derived`
 * names a default that loadConfig works out from other settings; `meta.range` words a range the
 * schema cannot show. docs/configuration.md and the README's short table are written from here
 * (`npm run docs:config`).
 */
const flag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const optionalText = z.string().trim().min(1).optional();
const postgresUrl = z
  .string()
  .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
  .optional();
const list = (v: string) =>
  v
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);

// Symmetric algorithms (HS256) would let anyone holding the shared secret mint tokens; `none` is no signature.
export const asymmetricAlgorithms = new Set([
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]);

/** The origins of the example driver web app (`npm run driver-web`), let in by default in development only. */
export const DEVELOPMENT_CORS_ORIGINS = ['http://localhost:5173', 'http://127.0.0.1:5173'];

/** An exact web origin as browsers send it in `Origin`; `*` is refused (see docs/operations.md#cors). */
function isOrigin(value: string) {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value && !value.includes('*');
  } catch {
    return false;
  }
}

function isHttpUrl(value: string) {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

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

const identity = z.object({
  AUTH_MODE: z.enum(['dev', 'oidc']).optional().meta({
    description: '`dev`: the service is its own identity provider (`/dev/oidc`, `POST /dev/token`). `oidc`: tokens of `OIDC_ISSUER`.',
    derived: '`dev` without `OIDC_ISSUER`, else `oidc`',
  }),
  OIDC_ISSUER: z.url().optional().describe('Issuer URL; its metadata is read from `{OIDC_ISSUER}/.well-known/openid-configuration`.'),
  OIDC_AUDIENCE: z.string().min(1).default('tourline').describe('Required `aud` of bearer tokens.'),
  OIDC_PERSONALNUMMER_CLAIM: z.string().min(1).default('personalnummer').describe('Claim carrying the Personalnummer.'),
  OIDC_ALGORITHMS: z
    .string()
    .default([...asymmetricAlgorithms].join(','))
    .transform(list)
    .refine(
      (algorithms) => algorithms.length > 0 && algorithms.every((a) => asymmetricAlgorithms.has(a)),
      `must list only asymmetric algorithms (${[...asymmetricAlgorithms].join(', ')})`,
    )
    .meta({
      description: 'Accepted token algorithms; only asymmetric ones (a key is used only with the algorithm of its type).',
      range: 'comma-separated, of the default',
    }),
  OIDC_SYNC_ROLE_CLAIM: z
    .string()
    .min(1)
    .default('roles')
    .describe("Claim that carries a token's roles: an array of names or a space-separated string."),
  OIDC_SYNC_ROLE: z
    .string()
    .min(1)
    .default('tourline-sync')
    .describe("Role that may send any driver's tour and read any account (docs/authorization.md)."),
  OIDC_JWKS_COOLDOWN_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(10_000)
    .describe(
      "A token naming a key the service has not seen makes it fetch the issuer's key set, up to 3 times in a row; past that at most once per this many ms, and such tokens meanwhile get 503 with `Retry-After` (never 401). 0: no limit.",
    ),
  OIDC_JWKS_MAX_AGE_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(600)
    .describe(
      'A key set older than this is fetched again before its keys are used; a key the issuer withdrew stops working with that fetch. While the issuer cannot be asked, the set held keeps serving its keys.',
    ),
  OIDC_CLOCK_TOLERANCE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(300)
    .default(30)
    .describe('Leeway for `exp`, `nbf` and `iat` against an issuer whose clock runs a little off.'),
  OIDC_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(60_000)
    .default(5000)
    .describe('How long the issuer may take to answer a discovery or key-set request before it counts as unreachable.'),
  AUTH_TOKEN_CACHE_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000_000)
    .default(50_000)
    .describe(
      'Verified tokens kept in memory (least recently used dropped); keep it above the open WebSockets plus the REST clients, or signatures are checked again.',
    ),
  // Tests go below the floor of 10 seconds to see tokens expire (NODE_ENV=test only, checked in config.ts).
  DEV_TOKEN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(12 * 3600)
    .meta({ description: 'Lifetime of development tokens.', range: '≥ 10 (tests may go lower)' }),
  // Several keys, so a new one can be rolled out before the old one is withdrawn.
  ADMIN_API_KEY: z
    .string()
    .transform(list)
    .refine((keys) => keys.length > 0 && keys.every((k) => k.length >= 16), 'every key must be at least 16 characters')
    .optional()
    .meta({
      description:
        'Keys for `/admin/...` and `POST /dev/token` (header `X-Admin-Api-Key`): every listed key works. Without it, development generates one and keeps it in `DATA_DIR/admin-api-key`.',
      derived: 'generated outside production',
      range: 'comma-separated, 16+ characters each',
    }),
  AUTH_REFUSAL_LIMIT: z.coerce
    .number()
    .int()
    .min(1)
    .default(100)
    .describe(
      'Refused (401) requests to `/admin/...` and `/dev/...` one client address may make per window; past it every such request from there is 429 `rate_limited` with `Retry-After` until the window ends.',
    ),
  AUTH_REFUSAL_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60).describe('The window of `AUTH_REFUSAL_LIMIT`.'),
});

const browsers = z.object({
  CORS_ORIGINS: z
    .string()
    .default('')
    .transform(list)
    .refine(
      (origins) => origins.every(isOrigin),
      'must list exact origins like https://driver.example.com (scheme, host, optional port; no path, no wildcard), comma-separated',
    )
    .meta({
      description: `Web app origins allowed to call the API from a browser, also checked on the WebSocket's \`Origin\`; \`*\` is refused. None: no CORS headers, except in development, where ${DEVELOPMENT_CORS_ORIGINS.map((o) => `\`${o}\``).join(' and ')} (the example driver web app) are let in (docs/operations.md#cors).`,
      range: 'exact origins, comma-separated',
    }),
  TRUST_PROXY_HOPS: z.coerce
    .number()
    .int()
    .min(0)
    .max(10)
    .default(0)
    .describe(
      "Proxies in front of the service whose `X-Forwarded-For` names the client address (for the refusal limit). 0: the peer's address; a request that shows `X-Forwarded-For` then makes one warning.",
    ),
  // Only behind TLS: a browser that saw it refuses plain HTTP to this host for that long.
  HSTS_MAX_AGE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(63_072_000)
    .default(0)
    .describe('`Strict-Transport-Security` max-age on every answer; set it only where clients reach the service over TLS. 0: not sent.'),
  COMPRESSION_MIN_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(1024)
    .describe(
      'Smallest JSON/text answer sent compressed (brotli or gzip, as the client accepts); WebSocket messages from 8 KB or this, whichever is larger (permessage-deflate).',
    ),
});

const erp = z.object({
  // No default here: outside production they default to demo and local, in production they must be chosen.
  ERP_MODE: z.enum(['demo', 'http']).optional().meta({
    description: '`demo`: generated tours from inside the process (refused in production). `http`: the ERP at `ERP_BASE_URL`.',
    derived: '`demo` outside production; required in production',
  }),
  ERP_BASE_URL: z.url().optional().describe('ERP address; required with `ERP_MODE=http`.'),
  ERP_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000).describe('Timeout of one ERP call.'),
  ERP_RETRIES: z.coerce.number().int().min(0).max(10).default(2).describe('Retries of a failed ERP call.'),
  ERP_TOKEN: optionalText.describe(
    'Static bearer token sent as `Authorization: Bearer …` on every ERP call; excludes basic and OAuth authentication.',
  ),
  // RFC 7617: a user-id with a colon cannot be told from the password.
  ERP_USERNAME: optionalText
    .refine((v) => v === undefined || !v.includes(':'), 'must not contain a colon (basic authentication)')
    .meta({
      description: 'User for basic authentication to the ERP (`Authorization: Basic …` on every call), with `ERP_PASSWORD`.',
      range: 'text without a colon',
    }),
  ERP_PASSWORD: z.string().min(1).optional().describe('Password for basic authentication to the ERP, with `ERP_USERNAME`.'),
  ERP_OAUTH_TOKEN_URL: z
    .url()
    .optional()
    .describe(
      'OAuth 2 token endpoint: every ERP call carries a bearer token got there by client credentials, renewed shortly before it expires and once when the ERP answers 401; with `ERP_OAUTH_CLIENT_ID` and `ERP_OAUTH_CLIENT_SECRET`.',
    ),
  ERP_OAUTH_CLIENT_ID: optionalText.describe('OAuth 2 client id for the ERP (sent to the token endpoint by basic authentication).'),
  ERP_OAUTH_CLIENT_SECRET: z.string().min(1).optional().describe('OAuth 2 client secret for the ERP.'),
  ERP_OAUTH_SCOPE: optionalText.describe('`scope` asked for at the token endpoint; none without it.'),
  ERP_IMPORT_ENABLED: flag.default(true).describe('Scheduled import and startup catch-up import.'),
  ERP_IMPORT_CRON: z
    .string()
    .default('0 5 * * *')
    .meta({ description: 'Schedule of the daily import, Berlin time.', range: 'cron syntax' }),
  ERP_IMPORT_OFFSET_DAYS: z.coerce.number().int().min(-7).max(30).default(1).describe('Import target date = today + this many days.'),
  ERP_PUSH_POLL_MS: z.coerce
    .number()
    .int()
    .min(10)
    .default(15_000)
    .describe('How often the write-back job looks for completions whose ERP push or delivery report is still open.'),
  ERP_PUSH_RETRY_BASE_MS: z.coerce
    .number()
    .int()
    .min(10)
    .default(60_000)
    .describe('Wait before the first retry of a failed ERP push; doubles with every further attempt.'),
  ERP_PUSH_RETRY_MAX_MS: z.coerce
    .number()
    .int()
    .min(10)
    .default(6 * 3600 * 1000)
    .describe('Longest wait between two ERP push retries.'),
});

const documents = z.object({
  DOCUMENT_STORE: z.enum(['local', 'http', 's3']).optional().meta({
    description:
      '`local`: files under `DATA_DIR/documents`, for one instance only (production warns at start). `http`: the document store at `DOCUMENT_STORE_URL`. `s3`: the S3 bucket `S3_BUCKET`.',
    derived: '`local` outside production; required in production',
  }),
  DOCUMENT_STORE_URL: z.url().optional().describe('Document store address; required with `DOCUMENT_STORE=http`.'),
  DOCUMENT_STORE_TOKEN: optionalText.describe('Bearer token for the HTTP document store.'),
  S3_BUCKET: optionalText.describe('Bucket of the S3 document store; required with `DOCUMENT_STORE=s3`.'),
  S3_REGION: z.string().min(1).default('us-east-1').describe('Region of the bucket.'),
  S3_ENDPOINT: z.url().optional().describe("Address of an S3-compatible service (MinIO, Ceph, GCS's S3 API); AWS S3 without it."),
  S3_FORCE_PATH_STYLE: flag.default(false).describe('Address the bucket in the path (`{endpoint}/{bucket}/{key}`), as MinIO needs.'),
  AWS_ACCESS_KEY_ID: optionalText.describe(
    'Key of the S3 store, with `AWS_SECRET_ACCESS_KEY`; without both the AWS default chain is used (profile, instance or task role).',
  ),
  AWS_SECRET_ACCESS_KEY: optionalText.describe('Secret of `AWS_ACCESS_KEY_ID`.'),
});

const sync = z.object({
  TOUR_CACHE_MB: z.coerce
    .number()
    .min(0)
    .default(64)
    .describe('Memory for tours as last answered by `GET /tours/{id}` (docs/erp-import.md#reading-tours); `0` renders every read.'),
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

const httpUrl = z.string().refine(isHttpUrl, 'must be an http(s) URL').optional();

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
