import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  README,
  REFERENCE,
  configurationReference,
  newcomerSettings,
  settings,
  withNewcomerTable,
} from '../../server/cli/configReference.js';
import { ConfigError, loadConfig, loadDatabaseConfig } from '../../server/config.js';
import { configVariables } from '../../server/config/variables.js';
import { errorCatalogue } from '../../server/errors.js';
import { productionSummary, productionWarnings } from '../../server/productionSummary.js';

const issuer = 'https://idp.example.test';
const adminKey = 'production-admin-key-0123456789';
/** What production needs besides an issuer and an admin key: an ERP and a document store, both chosen. */
const chosen = { ERP_MODE: 'http', ERP_BASE_URL: 'https://erp.example.test/api/', DOCUMENT_STORE: 's3', S3_BUCKET: 'tourline-documents' };
const oauthClient = {
  ERP_OAUTH_TOKEN_URL: 'https://idp.example.test/oauth/token',
  ERP_OAUTH_CLIENT_ID: 'tourline',
  ERP_OAUTH_CLIENT_SECRET: 'client-secret-s3cret',
};
const production = { NODE_ENV: 'production', OIDC_ISSUER: issuer, ADMIN_API_KEY: adminKey, ...chosen };

function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  it('starts on a fresh machine with defaults: PGlite in ./data, dev identity provider, demo ERP', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      env: 'development',
      port: 3000,
      host: '0.0.0.0',
      dataDir: path.resolve('./data'),
      databaseUrl: undefined,
      bodyLimitBytes: 2 * 1024 * 1024,
      logLevel: 'info',
      auth: {
        mode: 'dev',
        issuer: undefined,
        audience: 'tourline',
        personalnummerClaim: 'personalnummer',
        algorithms: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'],
        jwksCooldownMs: 10_000,
        adminApiKeys: undefined,
        tokenCacheSize: 50_000,
      },
      erp: { mode: 'demo', importEnabled: true, importOffsetDays: 1 },
      documents: { mode: 'local' },
      heapGrowingPercent: 300,
    });
  });

  it('drains 5 s on SIGTERM in production and not at all elsewhere, unless SHUTDOWN_DRAIN_MS says otherwise', () => {
    expect(loadConfig(production).shutdown).toEqual({ drainMs: 5000, webSocketBatchSize: 200 });
    expect(loadConfig({}).shutdown.drainMs).toBe(0);
    expect(loadConfig({ ...production, SHUTDOWN_DRAIN_MS: '0' }).shutdown.drainMs).toBe(0);
    expect(loadConfig({ SHUTDOWN_DRAIN_MS: '20000' }).shutdown.drainMs).toBe(20_000);
    expect(loadConfig({}).metricsPort).toBeUndefined();
  });

  it('treats an empty value as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '' })).toMatchObject({ port: 3000, databaseUrl: undefined });
  });

  it('switches to OIDC when an issuer is configured and reads the algorithm list', () => {
    const config = loadConfig({ OIDC_ISSUER: issuer, OIDC_ALGORITHMS: ' RS256 , ES384 ', OIDC_JWKS_COOLDOWN_MS: '30000' });
    expect(config.auth).toMatchObject({ mode: 'oidc', issuer, algorithms: ['RS256', 'ES384'], jwksCooldownMs: 30_000 });
  });

  it('reads PostgreSQL, flags and numbers from their text form', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://u:p@db:5432/tourline',
      ERP_IMPORT_ENABLED: '0',
      PORT: '8080',
      TOUR_CACHE_MB: '0.5',
    });
    expect(config).toMatchObject({
      databaseUrl: 'postgres://u:p@db:5432/tourline',
      port: 8080,
      erp: { importEnabled: false },
      tourCacheBytes: 512 * 1024,
    });
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ METRICS_PORT: '70000' }, 'METRICS_PORT'],
    [{ METRICS_PORT: 'nine' }, 'METRICS_PORT'],
    [{ SHUTDOWN_DRAIN_MS: '-1' }, 'SHUTDOWN_DRAIN_MS'],
    [{ SHUTDOWN_DRAIN_MS: 'soon' }, 'SHUTDOWN_DRAIN_MS'],
    [{ SHUTDOWN_WS_BATCH_SIZE: '0' }, 'SHUTDOWN_WS_BATCH_SIZE'],
    [{ READINESS_TIMEOUT_MS: '0' }, 'READINESS_TIMEOUT_MS'],
    [{ COMPRESSION_MIN_BYTES: '-5' }, 'COMPRESSION_MIN_BYTES'],
    [{ COMPRESSION_MIN_BYTES: '1k' }, 'COMPRESSION_MIN_BYTES'],
    [{ HEAP_GROWING_PERCENT: '-1' }, 'HEAP_GROWING_PERCENT'],
    [{ HEAP_GROWING_PERCENT: '5000' }, 'HEAP_GROWING_PERCENT'],
    [{ HEAP_GROWING_PERCENT: 'more' }, 'HEAP_GROWING_PERCENT'],
    [{ AUTH_TOKEN_CACHE_SIZE: '0' }, 'AUTH_TOKEN_CACHE_SIZE'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ ERP_MODE: 'http' }, 'ERP_BASE_URL'],
    [{ ERP_IMPORT_ENABLED: 'yes' }, 'ERP_IMPORT_ENABLED'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ ADMIN_API_KEY: 'short' }, 'ADMIN_API_KEY'],
    [{ ADMIN_API_KEY: 'long-enough-admin-key-0123,short' }, 'ADMIN_API_KEY'],
    [{ ADMIN_API_KEY: ' , ' }, 'ADMIN_API_KEY'],
    [{ ADMIN_API_KEY_FILE: '/nonexistent/tourline-admin-key' }, 'ADMIN_API_KEY_FILE'],
    [{ ADMIN_API_KEY: adminKey, ADMIN_API_KEY_FILE: '/etc/hostname' }, 'ADMIN_API_KEY_FILE'],
    [{ AUTH_REFUSAL_LIMIT: '0' }, 'AUTH_REFUSAL_LIMIT'],
    [{ TRUST_PROXY_HOPS: '-1' }, 'TRUST_PROXY_HOPS'],
    [{ AUTH_MODE: 'oidc' }, 'OIDC_ISSUER'],
    [{ DOCUMENT_STORE: 'http' }, 'DOCUMENT_STORE_URL'],
    [{ OIDC_JWKS_COOLDOWN_MS: '-1' }, 'OIDC_JWKS_COOLDOWN_MS'],
    [{ TOUR_CACHE_MB: '-1' }, 'TOUR_CACHE_MB'],
    [{ DATABASE_DIRECT_URL: 'postgres://db/tourline' }, 'DATABASE_DIRECT_URL'],
    [{ DATABASE_URL: 'postgres://pooler/tourline', DATABASE_DIRECT_URL: 'mysql://db' }, 'DATABASE_DIRECT_URL'],
    [{ DATABASE_MIGRATION_LOCK_TIMEOUT_MS: '-1' }, 'DATABASE_MIGRATION_LOCK_TIMEOUT_MS'],
  ])('refuses %j with a message naming %s', (env, variable) => {
    expect(refusal(env)).toContain(variable);
  });

  it.each(['HS256', 'RS256,HS256', 'none', ' , '])(
    'refuses OIDC_ALGORITHMS=%j because only asymmetric algorithms may be pinned',
    (algorithms) => {
      expect(refusal({ OIDC_ALGORITHMS: algorithms })).toContain('OIDC_ALGORITHMS');
    },
  );

  it('refuses production without an issuer', () => {
    expect(refusal({ NODE_ENV: 'production', ADMIN_API_KEY: adminKey, ...chosen })).toContain('OIDC_ISSUER');
  });

  it('refuses the development identity provider in production', () => {
    expect(refusal({ ...production, AUTH_MODE: 'dev' })).toContain('AUTH_MODE');
  });

  it('refuses production without an admin key', () => {
    expect(refusal({ NODE_ENV: 'production', OIDC_ISSUER: issuer, ...chosen })).toContain('ADMIN_API_KEY');
  });

  it.each(['ERP_MODE', 'DOCUMENT_STORE'])('refuses production without %s, naming it, though other modes default it', (variable) => {
    const env: Record<string, string> = { ...production, [variable]: '' };
    expect(refusal(env)).toMatch(new RegExp(`${variable}: is required in production`));
    expect(() => loadConfig({ ...env, NODE_ENV: 'development' })).not.toThrow();
  });

  it.each([
    [{ ERP_TOKEN: 'erp-token', ERP_USERNAME: 'tourline', ERP_PASSWORD: 'secret' }],
    [{ ERP_TOKEN: 'erp-token', ERP_USERNAME: 'tourline' }],
    [{ ERP_TOKEN: 'erp-token', ERP_PASSWORD: 'secret' }],
    [{ ERP_TOKEN: 'erp-token', ...oauthClient }],
    [{ ERP_USERNAME: 'tourline', ERP_PASSWORD: 'secret', ERP_OAUTH_CLIENT_ID: 'tourline' }],
  ])('refuses two ways to authenticate to the ERP together: %j', (env) => {
    expect(refusal(env)).toMatch(
      /ERP_(TOKEN|USERNAME): choose one way to authenticate to the ERP: ERP_TOKEN \(bearer\), ERP_USERNAME with ERP_PASSWORD \(basic\) or ERP_OAUTH_\* \(OAuth 2 client credentials\), not several/,
    );
  });

  it.each(['ERP_OAUTH_TOKEN_URL', 'ERP_OAUTH_CLIENT_ID', 'ERP_OAUTH_CLIENT_SECRET'])(
    'refuses an OAuth client for the ERP without %s',
    (name) => {
      expect(refusal({ ...oauthClient, [name]: '' })).toContain(
        `${name}: ERP_OAUTH_TOKEN_URL, ERP_OAUTH_CLIENT_ID and ERP_OAUTH_CLIENT_SECRET go together`,
      );
    },
  );

  it('reads an OAuth client for the ERP and summarises it by its token endpoint only', () => {
    const config = loadConfig({ ...production, ...oauthClient, ERP_OAUTH_SCOPE: 'erp.write' });
    expect(config.erp.auth).toEqual({
      kind: 'oauth',
      tokenUrl: oauthClient.ERP_OAUTH_TOKEN_URL,
      clientId: 'tourline',
      clientSecret: 'client-secret-s3cret',
      scope: 'erp.write',
    });
    const line = productionSummary(config);
    expect(line).toContain('with OAuth 2 client credentials from https://idp.example.test/oauth/token,');
    expect(line).not.toContain('s3cret');
  });

  it.each([
    [{ ERP_USERNAME: 'tourline' }, 'ERP_PASSWORD: ERP_USERNAME and ERP_PASSWORD go together'],
    [{ ERP_PASSWORD: 'secret' }, 'ERP_USERNAME: ERP_USERNAME and ERP_PASSWORD go together'],
    [{ ERP_USERNAME: 'tour:line', ERP_PASSWORD: 'secret' }, 'ERP_USERNAME: must not contain a colon'],
  ])('refuses incomplete basic authentication to the ERP: %j', (env, message) => {
    expect(refusal(env)).toContain(message);
  });

  it('reads the ERP credentials: a bearer token, basic authentication, or none', () => {
    expect(loadConfig({}).erp.auth).toEqual({ kind: 'none' });
    expect(loadConfig({ ERP_TOKEN: ' erp-token ' }).erp.auth).toEqual({ kind: 'bearer', token: 'erp-token' });
    expect(loadConfig({ ERP_USERNAME: 'tourline', ERP_PASSWORD: ' pass:word ' }).erp.auth).toEqual({
      kind: 'basic',
      username: 'tourline',
      password: ' pass:word ',
    });
  });

  it('summarises the way to the ERP is authenticated, never its credentials', () => {
    const bearer = productionSummary(loadConfig({ ...production, ERP_TOKEN: 'erp-token-s3cret' }));
    expect(bearer).toContain('ERP http https://erp.example.test/api with a bearer token,');
    const basic = productionSummary(loadConfig({ ...production, ERP_USERNAME: 'erp-user-s3cret', ERP_PASSWORD: 'erp-password-s3cret' }));
    expect(basic).toContain('ERP http https://erp.example.test/api with basic authentication,');
    expect(`${bearer}${basic}`).not.toContain('s3cret');
  });

  it('refuses production with the demo ERP, which would import made-up tours', () => {
    expect(refusal({ ...production, ERP_MODE: 'demo' })).toContain('ERP_MODE: demo is not allowed in production');
  });

  it('defaults to the demo ERP and local documents outside production only', () => {
    expect(loadConfig({ NODE_ENV: 'test' })).toMatchObject({ erp: { mode: 'demo' }, documents: { mode: 'local' } });
  });

  it('accepts local documents in production with one warning that names the directory and one instance', () => {
    const config = loadConfig({ ...production, DOCUMENT_STORE: 'local', DATA_DIR: '/srv/tourline' });
    expect(config.documents.mode).toBe('local');
    const warnings = productionWarnings(config);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(path.resolve('/srv/tourline/documents'));
    expect(warnings[0]).toContain('one instance only');
    expect(productionWarnings(loadConfig(production))).toEqual([]);
  });

  it('summarises production in one line with addresses and never a password, key or token', () => {
    const config = loadConfig({
      ...production,
      DATABASE_URL: 'postgres://tourline:db-password-s3cret@db.internal:5432/tourline?sslmode=require',
      DATABASE_DIRECT_URL: 'postgres://tourline:db-password-s3cret@db-primary.internal:5432/tourline',
      ERP_BASE_URL: 'https://connector:erp-password@erp.example.test/api/?token=erp-token-s3cret',
      S3_ENDPOINT: 'https://s3.example.test',
      AWS_ACCESS_KEY_ID: 'access-key-id-s3cret',
      AWS_SECRET_ACCESS_KEY: 'secret-access-key-s3cret',
      METRICS_PORT: '9464',
      CORS_ORIGINS: 'https://driver.example.test',
    });
    const line = productionSummary(config);
    expect(line).not.toContain('\n');
    for (const part of [
      issuer,
      'ERP http https://erp.example.test/api',
      'bucket tourline-documents at https://s3.example.test',
      'port 9464',
      'https://driver.example.test',
      'PostgreSQL db.internal:5432/tourline (direct db-primary.internal:5432/tourline)',
    ])
      expect(line).toContain(part);
    for (const secret of [adminKey, 'db-password', 'erp-password', 'erp-token', 'access-key-id', 'secret-access-key', 's3cret'])
      expect(line).not.toContain(secret);
  });

  it('summarises an HTTP document store without its token', () => {
    const config = loadConfig({
      ...production,
      DOCUMENT_STORE: 'http',
      DOCUMENT_STORE_URL: 'https://docs.example.test/store',
      DOCUMENT_STORE_TOKEN: 'store-token-s3cret',
    });
    expect(productionSummary(config)).toContain('documents http https://docs.example.test/store;');
    expect(productionSummary(config)).toContain(`database PGlite in ${config.dataDir}`);
    expect(productionSummary(config)).not.toContain('s3cret');
  });

  it('takes LISTEN, migrations and session locks to DATABASE_DIRECT_URL, else to DATABASE_URL', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://pooler/t' })).toMatchObject({
      databaseUrl: 'postgres://pooler/t',
      databaseDirectUrl: 'postgres://pooler/t',
    });
    expect(loadConfig({ DATABASE_URL: 'postgres://pooler/t', DATABASE_DIRECT_URL: 'postgres://db/t' })).toMatchObject({
      databaseUrl: 'postgres://pooler/t',
      databaseDirectUrl: 'postgres://db/t',
      databaseTimeouts: { migrationLockMs: 600_000 },
    });
    expect(loadConfig({}).databaseDirectUrl).toBeUndefined();
  });

  it("reads the database settings alone for a migration job, without the service's production settings", () => {
    const env = { NODE_ENV: 'production', DATABASE_URL: 'postgres://pooler/t', DATABASE_MIGRATION_LOCK_TIMEOUT_MS: '5000' };
    expect(refusal(env)).toContain('OIDC_ISSUER');
    expect(loadDatabaseConfig(env)).toMatchObject({
      databaseDirectUrl: 'postgres://pooler/t',
      databaseTimeouts: { migrationLockMs: 5000 },
    });
    expect(() => loadDatabaseConfig({ DATABASE_DIRECT_URL: 'postgres://db/t' })).toThrow(/DATABASE_DIRECT_URL: needs DATABASE_URL/);
  });

  it('reads several comma-separated admin keys, for rotation', () => {
    expect(loadConfig({ ADMIN_API_KEY: ` ${adminKey} , next-${adminKey} ` }).auth.adminApiKeys).toEqual([adminKey, `next-${adminKey}`]);
  });

  describe('secrets from files', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tourline-secrets-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const secret = (name: string, content: string) => {
      const file = path.join(dir, name);
      writeFileSync(file, content);
      return file;
    };

    it('reads each secret from its _FILE, without the trailing newline', () => {
      const config = loadConfig({
        ADMIN_API_KEY_FILE: secret('admin', `${adminKey}\n`),
        DATABASE_URL_FILE: secret('db', 'postgres://u:secret@db/tourline\n'),
        DOCUMENT_STORE: 'http',
        DOCUMENT_STORE_URL: 'https://docs.example.test',
        DOCUMENT_STORE_TOKEN_FILE: secret('docs', 'store-token'),
        ERP_TOKEN_FILE: secret('erp-token', 'erp-token\n'),
      });
      expect(config).toMatchObject({
        databaseUrl: 'postgres://u:secret@db/tourline',
        auth: { adminApiKeys: [adminKey] },
        documents: { token: 'store-token' },
        erp: { auth: { kind: 'bearer', token: 'erp-token' } },
      });
      expect(loadConfig({ ERP_USERNAME: 'tourline', ERP_PASSWORD_FILE: secret('erp-password', 'pass word\n') }).erp.auth).toEqual({
        kind: 'basic',
        username: 'tourline',
        password: 'pass word',
      });
      expect(refusal({ ERP_TOKEN: 'erp-token', ERP_TOKEN_FILE: secret('erp-token-2', 'other') })).toContain(
        'ERP_TOKEN_FILE: set either ERP_TOKEN or ERP_TOKEN_FILE, not both',
      );
    });

    it('checks a secret read from a file like one given directly', () => {
      expect(refusal({ ADMIN_API_KEY_FILE: secret('short', 'short\n') })).toContain('ADMIN_API_KEY');
    });
  });

  it('accepts production with an issuer, an admin key, an ERP and a document store', () => {
    expect(loadConfig(production).auth.mode).toBe('oidc');
  });
});

describe('the settings reference (npm run docs:config writes it)', () => {
  const reference = readFileSync(REFERENCE, 'utf8');
  const readme = readFileSync(README, 'utf8');
  const rowsOf = (text: string) => [...text.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((m) => m[1]);

  it('is the one server/config/variables.ts gives, in docs/configuration.md and in the README', () => {
    expect(reference).toBe(configurationReference());
    expect(readme).toBe(withNewcomerTable(readme));
  });

  it('documents every variable the service reads exactly once, and no other', () => {
    const documented = rowsOf(reference);
    expect(configVariables.length).toBeGreaterThan(20);
    expect([...documented].sort()).toEqual([...configVariables].sort());
    expect(documented.filter((name, i) => documented.indexOf(name) !== i)).toEqual([]);
  });

  it('gives each setting its default, range and meaning', () => {
    for (const setting of settings()) {
      expect(setting.meaning.length, setting.name).toBeGreaterThan(10);
      expect(setting.range, setting.name).not.toBe('');
    }
    const port = settings().find((s) => s.name === 'PORT');
    expect(port).toMatchObject({ defaultValue: '`3000`', range: 'integer 0–65535' });
  });

  it('keeps the README to the settings a newcomer needs, each once, and links the rest', () => {
    const inReadme = rowsOf(readme);
    expect(inReadme).toEqual(newcomerSettings);
    expect(inReadme.length).toBeLessThanOrEqual(12);
    expect(readme).toContain('(docs/configuration.md)');
  });

  it('lists every error code of the catalogue with its status in the README', () => {
    for (const [code, { status }] of Object.entries(errorCatalogue)) {
      expect(readme, code).toContain(`| \`${code}\` | ${status} |`);
    }
  });
});
