import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { DEVELOPMENT_CORS_ORIGINS } from './config/access.js';
import { secretVariables, Variables } from './config/variables.js';

// The direct connection sits beside a pooled one; alone it would leave the service on PGlite.
const directNeedsPooled = (env: { DATABASE_URL?: string; DATABASE_DIRECT_URL?: string }, ctx: z.RefinementCtx) => {
  if (env.DATABASE_DIRECT_URL && !env.DATABASE_URL)
    ctx.addIssue({ code: 'custom', path: ['DATABASE_DIRECT_URL'], message: 'needs DATABASE_URL' });
};

const Env = Variables.superRefine((env, ctx) => {
  const refuse = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
  directNeedsPooled(env, ctx);
  if (env.ERP_MODE === 'http' && !env.ERP_BASE_URL) refuse('ERP_BASE_URL', 'is required when ERP_MODE=http');
  const erpWays = [
    env.ERP_TOKEN && 'ERP_TOKEN',
    (env.ERP_USERNAME || env.ERP_PASSWORD) && 'ERP_USERNAME',
    (env.ERP_OAUTH_TOKEN_URL || env.ERP_OAUTH_CLIENT_ID || env.ERP_OAUTH_CLIENT_SECRET) && 'ERP_OAUTH_TOKEN_URL',
  ].filter(Boolean);
  if (erpWays.length > 1)
    refuse(
      erpWays[0] as string,
      'choose one way to authenticate to the ERP: ERP_TOKEN (bearer), ERP_USERNAME with ERP_PASSWORD (basic) or ERP_OAUTH_* (OAuth 2 client credentials), not several',
    );
  else if (env.ERP_OAUTH_TOKEN_URL || env.ERP_OAUTH_CLIENT_ID || env.ERP_OAUTH_CLIENT_SECRET) {
    for (const name of ['ERP_OAUTH_TOKEN_URL', 'ERP_OAUTH_CLIENT_ID', 'ERP_OAUTH_CLIENT_SECRET'] as const)
      if (!env[name]) refuse(name, 'ERP_OAUTH_TOKEN_URL, ERP_OAUTH_CLIENT_ID and ERP_OAUTH_CLIENT_SECRET go together');
  } else if (!env.ERP_USERNAME !== !env.ERP_PASSWORD)
    refuse(env.ERP_USERNAME ? 'ERP_PASSWORD' : 'ERP_USERNAME', 'ERP_USERNAME and ERP_PASSWORD go together');
  if (env.DOCUMENT_STORE === 'http' && !env.DOCUMENT_STORE_URL) refuse('DOCUMENT_STORE_URL', 'is required when DOCUMENT_STORE=http');
  if (env.DOCUMENT_STORE === 's3' && !env.S3_BUCKET) refuse('S3_BUCKET', 'is required when DOCUMENT_STORE=s3');
  if (!env.AWS_ACCESS_KEY_ID !== !env.AWS_SECRET_ACCESS_KEY)
    refuse('AWS_SECRET_ACCESS_KEY', 'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together');
  if (env.AUTH_MODE === 'oidc' && !env.OIDC_ISSUER) refuse('OIDC_ISSUER', 'is required when AUTH_MODE=oidc');
  if (env.NODE_ENV === 'production' && !env.OIDC_ISSUER) refuse('OIDC_ISSUER', 'is required in production');
  if (env.NODE_ENV === 'production' && env.AUTH_MODE === 'dev') refuse('AUTH_MODE', 'dev is not allowed in production');
  if (env.DEV_TOKEN_TTL_SECONDS < 10 && env.NODE_ENV !== 'test') refuse('DEV_TOKEN_TTL_SECONDS', 'must be at least 10');
  if (env.NODE_ENV === 'production' && !env.ADMIN_API_KEY) refuse('ADMIN_API_KEY', 'is required in production');
  // The demo ERP writes made-up tours for Personalnummern that real drivers may have.
  if (env.NODE_ENV === 'production' && !env.ERP_MODE) refuse('ERP_MODE', 'is required in production (http, with ERP_BASE_URL)');
  if (env.NODE_ENV === 'production' && env.ERP_MODE === 'demo') refuse('ERP_MODE', 'demo is not allowed in production');
  if (env.NODE_ENV === 'production' && !env.DOCUMENT_STORE)
    refuse('DOCUMENT_STORE', 'is required in production (s3, http, or local for one instance)');
});

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
      backOfficeRoleClaim: e.OIDC_BACK_OFFICE_ROLE_CLAIM,
      backOfficeRole: e.OIDC_BACK_OFFICE_ROLE,
      nameClaim: e.OIDC_NAME_CLAIM,
      consoleClientId: e.OIDC_CONSOLE_CLIENT_ID,
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
      importRetryFirstMs: e.ERP_IMPORT_RETRY_FIRST_MS,
      importRetryMaxMs: e.ERP_IMPORT_RETRY_MAX_MS,
      pushCancellations: e.ERP_PUSH_CANCELLATIONS,
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
    devices: { retentionDays: e.DEVICE_RETENTION_DAYS, maxPerAccount: e.DEVICES_PER_ACCOUNT },
    tourCacheBytes: Math.round(e.TOUR_CACHE_MB * 1024 * 1024),
    sync: { heartbeatMs: e.WS_HEARTBEAT_SECONDS * 1000, maxBufferedBytes: e.WS_MAX_BUFFERED_BYTES },
    metricsPort: e.METRICS_PORT,
    readinessTimeoutMs: e.READINESS_TIMEOUT_MS,
    compressionMinBytes: e.COMPRESSION_MIN_BYTES,
    hstsMaxAgeSeconds: e.HSTS_MAX_AGE_SECONDS,
    heapGrowingPercent: e.HEAP_GROWING_PERCENT,
    clientMinVersion: e.CLIENT_MIN_VERSION,
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

export function parse<T extends z.ZodType>(schema: T, env: Record<string, string | undefined>): z.infer<T> {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v.trim() !== ''));
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
