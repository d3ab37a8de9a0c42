import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

const flag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const optionalText = z.string().trim().min(1).optional();
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

const Variables = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  DATA_DIR: z.string().default('./data'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  DATABASE_DIRECT_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).default(3000),
  DATABASE_POOL_WAIT_MS: z.coerce.number().int().min(0).default(3000),
  DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).default(5000),
  DATABASE_LOCK_TIMEOUT_MS: z.coerce.number().int().min(100).default(3000),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  DATABASE_START_TIMEOUT_MS: z.coerce.number().int().min(0).default(0),
  DATABASE_MIGRATION_LOCK_TIMEOUT_MS: z.coerce.number().int().min(0).default(600_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(2 * 1024 * 1024),
  UPLOAD_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(10 * 1024 * 1024),
  PUBLIC_URL: z.url().optional(),
  CORS_ORIGINS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((o) => o.trim())
        .filter(Boolean),
    )
    .refine(
      (list) => list.every(isOrigin),
      'must list exact origins like https://driver.example.com (scheme, host, optional port; no path, no wildcard), comma-separated',
    ),

  AUTH_MODE: z.enum(['dev', 'oidc']).optional(),
  OIDC_ISSUER: z.url().optional(),
  OIDC_AUDIENCE: z.string().min(1).default('tourline'),
  OIDC_PERSONALNUMMER_CLAIM: z.string().min(1).default('personalnummer'),
  OIDC_ALGORITHMS: z
    .string()
    .default([...asymmetricAlgorithms].join(','))
    .transform((v) =>
      v
        .split(',')
        .map((a) => a.trim())
        .filter(Boolean),
    )
    .refine(
      (list) => list.length > 0 && list.every((a) => asymmetricAlgorithms.has(a)),
      `must list only asymmetric algorithms (${[...asymmetricAlgorithms].join(', ')})`,
    ),
  OIDC_JWKS_COOLDOWN_MS: z.coerce.number().int().min(0).default(10_000),
  OIDC_SYNC_ROLE_CLAIM: z.string().min(1).default('roles'),
  OIDC_SYNC_ROLE: z.string().min(1).default('tourline-sync'),
  OIDC_JWKS_MAX_AGE_SECONDS: z.coerce.number().int().min(1).default(600),
  OIDC_CLOCK_TOLERANCE_SECONDS: z.coerce.number().int().min(0).max(300).default(30),
  OIDC_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
  AUTH_TOKEN_CACHE_SIZE: z.coerce.number().int().min(1).max(10_000_000).default(50_000),
  // Tests go below the floor of 10 seconds to see tokens expire (NODE_ENV=test only, checked below).
  DEV_TOKEN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(12 * 3600),
  // Several keys, comma-separated, so a new one can be rolled out before the old one is withdrawn.
  ADMIN_API_KEY: z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean),
    )
    .refine((keys) => keys.length > 0 && keys.every((k) => k.length >= 16), 'every key must be at least 16 characters')
    .optional(),
  AUTH_REFUSAL_LIMIT: z.coerce.number().int().min(1).default(100),
  AUTH_REFUSAL_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
  TRUST_PROXY_HOPS: z.coerce.number().int().min(0).max(10).default(0),

  // No default here: outside production they default to demo and local, in production they must be chosen.
  ERP_MODE: z.enum(['demo', 'http']).optional(),
  ERP_BASE_URL: z.url().optional(),
  ERP_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  ERP_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  ERP_TOKEN: optionalText,
  // RFC 7617: a user-id with a colon cannot be told from the password.
  ERP_USERNAME: optionalText.refine((v) => v === undefined || !v.includes(':'), 'must not contain a colon (basic authentication)'),
  ERP_PASSWORD: z.string().min(1).optional(),
  ERP_OAUTH_TOKEN_URL: z.url().optional(),
  ERP_OAUTH_CLIENT_ID: optionalText,
  ERP_OAUTH_CLIENT_SECRET: z.string().min(1).optional(),
  ERP_OAUTH_SCOPE: optionalText,
  ERP_IMPORT_ENABLED: flag.default(true),
  ERP_IMPORT_CRON: z.string().default('0 5 * * *'),
  ERP_IMPORT_OFFSET_DAYS: z.coerce.number().int().min(-7).max(30).default(1),
  ERP_PUSH_POLL_MS: z.coerce.number().int().min(10).default(15_000),
  ERP_PUSH_RETRY_BASE_MS: z.coerce.number().int().min(10).default(60_000),
  ERP_PUSH_RETRY_MAX_MS: z.coerce
    .number()
    .int()
    .min(10)
    .default(6 * 3600 * 1000),

  DOCUMENT_STORE: z.enum(['local', 'http', 's3']).optional(),
  DOCUMENT_STORE_URL: z.url().optional(),
  DOCUMENT_STORE_TOKEN: optionalText,
  S3_BUCKET: optionalText,
  S3_REGION: z.string().min(1).default('us-east-1'),
  S3_ENDPOINT: z.url().optional(),
  S3_FORCE_PATH_STYLE: flag.default(false),
  AWS_ACCESS_KEY_ID: optionalText,
  AWS_SECRET_ACCESS_KEY: optionalText,

  COMPANY_NAME: z.string().default('Tourline Demo GmbH'),
  TOUR_CACHE_MB: z.coerce.number().min(0).default(64),
  CHANGE_LOG_RETENTION_DAYS: z.coerce.number().int().min(1).default(30),
  PROCESSED_EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).default(90),
  WS_HEARTBEAT_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  WS_MAX_BUFFERED_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  READINESS_TIMEOUT_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
  // Default 5 s in production: time for the load balancer to see /readyz fail before sockets close.
  SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).max(600_000).optional(),
  SHUTDOWN_WS_BATCH_SIZE: z.coerce.number().int().min(1).default(200),
  COMPRESSION_MIN_BYTES: z.coerce.number().int().min(0).default(1024),
  // Only behind TLS: a browser that saw it refuses plain HTTP to this host for that long.
  HSTS_MAX_AGE_SECONDS: z.coerce.number().int().min(0).max(63_072_000).default(0),
  HEAP_GROWING_PERCENT: z.coerce.number().int().min(0).max(1000).default(300),
});

// The direct connection sits beside a pooled one; alone it would leave the service on PGlite.
const directNeedsPooled = (env: { DATABASE_URL?: string; DATABASE_DIRECT_URL?: string }, ctx: z.RefinementCtx) => {
  if (env.DATABASE_DIRECT_URL && !env.DATABASE_URL)
    ctx.addIssue({ code: 'custom', path: ['DATABASE_DIRECT_URL'], message: 'needs DATABASE_URL' });
};

const Env = Variables.superRefine((env, ctx) => {
  directNeedsPooled(env, ctx);
  if (env.ERP_MODE === 'http' && !env.ERP_BASE_URL)
    ctx.addIssue({ code: 'custom', path: ['ERP_BASE_URL'], message: 'is required when ERP_MODE=http' });
  const erpWays = [
    env.ERP_TOKEN && 'ERP_TOKEN',
    (env.ERP_USERNAME || env.ERP_PASSWORD) && 'ERP_USERNAME',
    (env.ERP_OAUTH_TOKEN_URL || env.ERP_OAUTH_CLIENT_ID || env.ERP_OAUTH_CLIENT_SECRET) && 'ERP_OAUTH_TOKEN_URL',
  ].filter(Boolean);
  if (erpWays.length > 1)
    ctx.addIssue({
      code: 'custom',
      path: [erpWays[0] as string],
      message:
        'choose one way to authenticate to the ERP: ERP_TOKEN (bearer), ERP_USERNAME with ERP_PASSWORD (basic) or ERP_OAUTH_* (OAuth 2 client credentials), not several',
    });
  else if (env.ERP_OAUTH_TOKEN_URL || env.ERP_OAUTH_CLIENT_ID || env.ERP_OAUTH_CLIENT_SECRET) {
    for (const name of ['ERP_OAUTH_TOKEN_URL', 'ERP_OAUTH_CLIENT_ID', 'ERP_OAUTH_CLIENT_SECRET'] as const)
      if (!env[name])
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: 'ERP_OAUTH_TOKEN_URL, ERP_OAUTH_CLIENT_ID and ERP_OAUTH_CLIENT_SECRET go together',
        });
  } else if (!env.ERP_USERNAME !== !env.ERP_PASSWORD)
    ctx.addIssue({
      code: 'custom',
      path: [env.ERP_USERNAME ? 'ERP_PASSWORD' : 'ERP_USERNAME'],
      message: 'ERP_USERNAME and ERP_PASSWORD go together',
    });
  if (env.DOCUMENT_STORE === 'http' && !env.DOCUMENT_STORE_URL)
    ctx.addIssue({ code: 'custom', path: ['DOCUMENT_STORE_URL'], message: 'is required when DOCUMENT_STORE=http' });
  if (env.DOCUMENT_STORE === 's3' && !env.S3_BUCKET)
    ctx.addIssue({ code: 'custom', path: ['S3_BUCKET'], message: 'is required when DOCUMENT_STORE=s3' });
  if (!env.AWS_ACCESS_KEY_ID !== !env.AWS_SECRET_ACCESS_KEY)
    ctx.addIssue({ code: 'custom', path: ['AWS_SECRET_ACCESS_KEY'], message: 'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together' });
  if (env.AUTH_MODE === 'oidc' && !env.OIDC_ISSUER)
    ctx.addIssue({ code: 'custom', path: ['OIDC_ISSUER'], message: 'is required when AUTH_MODE=oidc' });
  if (env.NODE_ENV === 'production' && !env.OIDC_ISSUER)
    ctx.addIssue({ code: 'custom', path: ['OIDC_ISSUER'], message: 'is required in production' });
  if (env.NODE_ENV === 'production' && env.AUTH_MODE === 'dev')
    ctx.addIssue({ code: 'custom', path: ['AUTH_MODE'], message: 'dev is not allowed in production' });
  if (env.DEV_TOKEN_TTL_SECONDS < 10 && env.NODE_ENV !== 'test')
    ctx.addIssue({ code: 'custom', path: ['DEV_TOKEN_TTL_SECONDS'], message: 'must be at least 10' });
  if (env.NODE_ENV === 'production' && !env.ADMIN_API_KEY)
    ctx.addIssue({ code: 'custom', path: ['ADMIN_API_KEY'], message: 'is required in production' });
  // The demo ERP writes made-up tours for Personalnummern that real drivers may have.
  if (env.NODE_ENV === 'production' && !env.ERP_MODE)
    ctx.addIssue({ code: 'custom', path: ['ERP_MODE'], message: 'is required in production (http, with ERP_BASE_URL)' });
  if (env.NODE_ENV === 'production' && env.ERP_MODE === 'demo')
    ctx.addIssue({ code: 'custom', path: ['ERP_MODE'], message: 'demo is not allowed in production' });
  if (env.NODE_ENV === 'production' && !env.DOCUMENT_STORE)
    ctx.addIssue({ code: 'custom', path: ['DOCUMENT_STORE'], message: 'is required in production (s3, http, or local for one instance)' });
});

/** Secrets that may instead come from a file named by `<NAME>_FILE` (Docker and Kubernetes secrets). */
const secretVariables = [
  'DATABASE_URL',
  'DATABASE_DIRECT_URL',
  'ADMIN_API_KEY',
  'DOCUMENT_STORE_TOKEN',
  'AWS_SECRET_ACCESS_KEY',
  'ERP_TOKEN',
  'ERP_PASSWORD',
  'ERP_OAUTH_CLIENT_SECRET',
] as const;

/** The names of every environment variable the service reads (the README documents each). */
export const configVariables = [...Object.keys(Variables.shape), ...secretVariables.map((name) => `${name}_FILE`)];

export type Config = ReturnType<typeof loadConfig>;

export class ConfigError extends Error {}

/** Reads the environment once; a bad value stops the start with the variable's name. */
export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const e = parse(Env, env);
  const authMode = e.AUTH_MODE ?? (e.OIDC_ISSUER ? 'oidc' : 'dev');
  return {
    env: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    trustProxyHops: e.TRUST_PROXY_HOPS,
    dataDir: path.resolve(e.DATA_DIR),
    ...databaseSettings(e),
    logLevel: e.LOG_LEVEL,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    uploadLimitBytes: e.UPLOAD_LIMIT_BYTES,
    publicUrl: e.PUBLIC_URL,
    corsOrigins: e.CORS_ORIGINS.length === 0 && e.NODE_ENV === 'development' ? DEVELOPMENT_CORS_ORIGINS : e.CORS_ORIGINS,
    auth: {
      mode: authMode as 'dev' | 'oidc',
      issuer: e.OIDC_ISSUER,
      audience: e.OIDC_AUDIENCE,
      personalnummerClaim: e.OIDC_PERSONALNUMMER_CLAIM,
      algorithms: e.OIDC_ALGORITHMS,
      jwksCooldownMs: e.OIDC_JWKS_COOLDOWN_MS,
      syncRoleClaim: e.OIDC_SYNC_ROLE_CLAIM,
      syncRole: e.OIDC_SYNC_ROLE,
      jwksMaxAgeMs: e.OIDC_JWKS_MAX_AGE_SECONDS * 1000,
      clockToleranceSeconds: e.OIDC_CLOCK_TOLERANCE_SECONDS,
      timeoutMs: e.OIDC_TIMEOUT_MS,
      tokenCacheSize: e.AUTH_TOKEN_CACHE_SIZE,
      devTokenTtlSeconds: e.DEV_TOKEN_TTL_SECONDS,
      adminApiKeys: e.ADMIN_API_KEY,
      refusalLimit: e.AUTH_REFUSAL_LIMIT,
      refusalWindowMs: e.AUTH_REFUSAL_WINDOW_SECONDS * 1000,
    },
    erp: {
      mode: e.ERP_MODE ?? 'demo',
      baseUrl: e.ERP_BASE_URL,
      timeoutMs: e.ERP_TIMEOUT_MS,
      retries: e.ERP_RETRIES,
      auth: erpAuth(e),
      importEnabled: e.ERP_IMPORT_ENABLED,
      importCron: e.ERP_IMPORT_CRON,
      importOffsetDays: e.ERP_IMPORT_OFFSET_DAYS,
      pushPollMs: e.ERP_PUSH_POLL_MS,
      pushRetryBaseMs: e.ERP_PUSH_RETRY_BASE_MS,
      pushRetryMaxMs: e.ERP_PUSH_RETRY_MAX_MS,
    },
    documents: {
      mode: e.DOCUMENT_STORE ?? 'local',
      url: e.DOCUMENT_STORE_URL,
      token: e.DOCUMENT_STORE_TOKEN,
      s3: {
        bucket: e.S3_BUCKET!,
        region: e.S3_REGION,
        endpoint: e.S3_ENDPOINT,
        forcePathStyle: e.S3_FORCE_PATH_STYLE,
        credentials: e.AWS_ACCESS_KEY_ID ? { accessKeyId: e.AWS_ACCESS_KEY_ID, secretAccessKey: e.AWS_SECRET_ACCESS_KEY! } : undefined,
      },
    },
    companyName: e.COMPANY_NAME,
    changeLogRetentionDays: e.CHANGE_LOG_RETENTION_DAYS,
    processedEventRetentionDays: e.PROCESSED_EVENT_RETENTION_DAYS,
    tourCacheBytes: Math.round(e.TOUR_CACHE_MB * 1024 * 1024),
    sync: { heartbeatMs: e.WS_HEARTBEAT_SECONDS * 1000, maxBufferedBytes: e.WS_MAX_BUFFERED_BYTES },
    metricsPort: e.METRICS_PORT,
    readinessTimeoutMs: e.READINESS_TIMEOUT_MS,
    compressionMinBytes: e.COMPRESSION_MIN_BYTES,
    hstsMaxAgeSeconds: e.HSTS_MAX_AGE_SECONDS,
    heapGrowingPercent: e.HEAP_GROWING_PERCENT,
    shutdown: { drainMs: e.SHUTDOWN_DRAIN_MS ?? (e.NODE_ENV === 'production' ? 5000 : 0), webSocketBatchSize: e.SHUTDOWN_WS_BATCH_SIZE },
  };
}

/** How every ERP call authenticates; the secrets go into headers only, never into a log line. */
function erpAuth(e: z.infer<typeof Variables>): ErpAuth {
  if (e.ERP_TOKEN) return { kind: 'bearer', token: e.ERP_TOKEN };
  if (e.ERP_USERNAME && e.ERP_PASSWORD) return { kind: 'basic', username: e.ERP_USERNAME, password: e.ERP_PASSWORD };
  if (e.ERP_OAUTH_TOKEN_URL && e.ERP_OAUTH_CLIENT_ID && e.ERP_OAUTH_CLIENT_SECRET)
    return {
      kind: 'oauth',
      tokenUrl: e.ERP_OAUTH_TOKEN_URL,
      clientId: e.ERP_OAUTH_CLIENT_ID,
      clientSecret: e.ERP_OAUTH_CLIENT_SECRET,
      scope: e.ERP_OAUTH_SCOPE,
    };
  return { kind: 'none' };
}

export type ErpAuth =
  | { kind: 'none' }
  | { kind: 'bearer'; token: string }
  | { kind: 'basic'; username: string; password: string }
  | { kind: 'oauth'; tokenUrl: string; clientId: string; clientSecret: string; scope: string | undefined };

function parse<T extends z.ZodType>(schema: T, env: Record<string, string | undefined>): z.infer<T> {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(withSecretFiles(cleaned));
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

/** The database settings; LISTEN, migrations and session locks go to the direct URL (DATABASE_URL may be a pooler). */
function databaseSettings(e: Pick<z.infer<typeof Variables>, DatabaseVariable>) {
  return {
    databaseUrl: e.DATABASE_URL,
    databaseDirectUrl: e.DATABASE_DIRECT_URL ?? e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    databaseTimeouts: {
      connectMs: e.DATABASE_CONNECT_TIMEOUT_MS,
      poolWaitMs: e.DATABASE_POOL_WAIT_MS,
      statementMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
      lockMs: e.DATABASE_LOCK_TIMEOUT_MS,
      idleInTransactionMs: e.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
      startMs: e.DATABASE_START_TIMEOUT_MS,
      migrationLockMs: e.DATABASE_MIGRATION_LOCK_TIMEOUT_MS,
    },
  };
}

const databaseVariables = {
  DATA_DIR: true,
  LOG_LEVEL: true,
  DATABASE_URL: true,
  DATABASE_DIRECT_URL: true,
  DATABASE_POOL_SIZE: true,
  DATABASE_CONNECT_TIMEOUT_MS: true,
  DATABASE_POOL_WAIT_MS: true,
  DATABASE_STATEMENT_TIMEOUT_MS: true,
  DATABASE_LOCK_TIMEOUT_MS: true,
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: true,
  DATABASE_START_TIMEOUT_MS: true,
  DATABASE_MIGRATION_LOCK_TIMEOUT_MS: true,
} as const;
type DatabaseVariable = keyof typeof databaseVariables;

/** Only the database settings, for `npm run migrate`: a migration job needs none of the service's other settings. */
export function loadDatabaseConfig(env: Record<string, string | undefined> = process.env) {
  const e = parse(Variables.pick(databaseVariables).superRefine(directNeedsPooled), env);
  return { dataDir: path.resolve(e.DATA_DIR), logLevel: e.LOG_LEVEL, ...databaseSettings(e) };
}

/** Fills each secret from its `_FILE`; naming both, or a file that cannot be read, stops the start. */
function withSecretFiles(env: Record<string, string | undefined>) {
  const filled = { ...env };
  const problems: string[] = [];
  for (const name of secretVariables) {
    const file = env[`${name}_FILE`];
    if (file === undefined) continue;
    if (env[name] !== undefined) {
      problems.push(`  ${name}_FILE: set either ${name} or ${name}_FILE, not both`);
      continue;
    }
    try {
      // Secret files usually end with a newline that is no part of the secret.
      filled[name] = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      problems.push(`  ${name}_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    }
  }
  if (problems.length) throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
  return filled;
}
