import { afterAll, beforeAll } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { accounts } from '../../server/db/schema.js';
import { startServer, type RunningServer, type StartOptions } from '../../server/server.js';
import { startBuiltServer, type BuiltServer } from './builtServer.js';
import { createPostgresDatabase, type DatabaseKind } from './databases.js';
import { againstBuild } from './target.js';

export const TEST_ADMIN_KEY = 'test-admin-key-0123456789abcdef';
/** The default sync role (OIDC_SYNC_ROLE): sends any driver's tour. */
export const SYNC_ROLE = 'tourline-sync';
/** The default back-office role (OIDC_BACK_OFFICE_ROLE). */
export const BACK_OFFICE_ROLE = 'tourline-back-office';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  token?: string;
  admin?: boolean | string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** Thrown where a test reaches into the service: such a test is not black-box and stays out of the `build` project. */
const notBlackBox = (what: string) => new Error(`${what} needs the service in process; the built service is tested black-box only`);

/** The service under test: started in process (`startServer`), or the build in a child process. */
export class TestServer {
  private readonly inProcess?: RunningServer;
  private readonly built?: BuiltServer;

  constructor(server: RunningServer | BuiltServer) {
    if ('ctx' in server) this.inProcess = server;
    else this.built = server;
  }

  get running(): RunningServer {
    if (!this.inProcess) throw notBlackBox('The running server');
    return this.inProcess;
  }
  get url() {
    return (this.built ?? this.running).url;
  }
  get ctx() {
    return this.running.ctx;
  }
  /**
   * How many statements `work` sends, and its result. Counted once the change notifier has no
   * head read running or due: after a writer rolled back it reads one in the background.
   */
  async statementsOf<T>(work: () => Promise<T>): Promise<{ statements: number; result: T }> {
    await this.ctx.changes.quiet();
    const before = this.ctx.database.queries.count;
    const result = await work();
    return { statements: this.ctx.database.queries.count - before, result };
  }
  /** The service's database: its own handle in process, a connection of the test's to the built service's. */
  get db() {
    return this.built?.db ?? this.running.ctx.database.db;
  }

  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.admin) headers['x-admin-api-key'] = options.admin === true ? TEST_ADMIN_KEY : options.admin;
    let body: BodyInit | undefined;
    if (options.body instanceof FormData || typeof options.body === 'string') body = options.body as BodyInit;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(`${this.url}${path}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    if ((response.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }

  get = <T = any>(path: string, options?: RequestOptions) => this.request<T>('GET', path, options);
  post = <T = any>(path: string, body?: unknown, options?: RequestOptions) => this.request<T>('POST', path, { ...options, body });
  put = <T = any>(path: string, body?: unknown, options?: RequestOptions) => this.request<T>('PUT', path, { ...options, body });
  patch = <T = any>(path: string, body?: unknown, options?: RequestOptions) => this.request<T>('PATCH', path, { ...options, body });
  delete = <T = any>(path: string, options?: RequestOptions) => this.request<T>('DELETE', path, options);

  /** Creates (or reactivates) an account directly in the database. */
  async seedAccount(personalnummer: number, name = `Fahrer ${personalnummer}`, active = true) {
    await this.db
      .insert(accounts)
      .values({ personalnummer, name, active })
      .onConflictDoUpdate({ target: accounts.personalnummer, set: { name, active } });
  }

  /** A token for an account, seeding the account first; `roles` go into the role claim. */
  async token(personalnummer: number, roles?: string[]): Promise<string> {
    await this.seedAccount(personalnummer);
    return this.issueToken(personalnummer, roles);
  }

  /**
   * A token for an existing account: from the development identity provider in process, from
   * the test's OIDC issuer for the built service (which refuses `/dev/token` in production).
   */
  async issueToken(personalnummer: number, roles?: string[]): Promise<string> {
    if (this.built) return this.built.token(personalnummer, roles);
    const response = await this.post('/dev/token', { personalnummer, roles }, { admin: true });
    if (response.status !== 200) throw new Error(`token: ${response.status} ${response.text}`);
    return response.body.accessToken;
  }

  /** A token of the back-office role (OIDC_BACK_OFFICE_ROLE) for the person of this name. */
  async backOfficeToken(name: string): Promise<string> {
    if (this.built) return this.built.backOfficeToken(name);
    const response = await this.post('/dev/token', { backOffice: name }, { admin: true });
    if (response.status !== 200) throw new Error(`token: ${response.status} ${response.text}`);
    return response.body.accessToken;
  }

  close() {
    return (this.built ?? this.running).close();
  }
}

/** The settings of a test server: quiet, no ERP import, a fresh PostgreSQL database unless PGlite or given. */
async function testSettings(kind: DatabaseKind, env: Record<string, string>): Promise<Record<string, string>> {
  return {
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    ADMIN_API_KEY: TEST_ADMIN_KEY,
    ERP_IMPORT_ENABLED: 'false',
    ...(kind === 'postgres' && !env.DATABASE_URL ? { DATABASE_URL: await createPostgresDatabase() } : {}),
    ...env,
  };
}

export async function testConfig(kind: DatabaseKind, env: Record<string, string> = {}) {
  return loadConfig(await testSettings(kind, env));
}

export async function startTestServer(kind: DatabaseKind, env: Record<string, string> = {}, options: StartOptions = {}) {
  if (againstBuild) {
    if (kind !== 'postgres' || Object.keys(options).length) throw notBlackBox(`A server on ${kind} with ${Object.keys(options)}`);
    return new TestServer(await startBuiltServer(await testSettings(kind, env)));
  }
  const config = await testConfig(kind, env);
  return new TestServer(await startServer(config, { ephemeral: true, ...options }));
}

/** A server for the enclosing describe block, started before its tests and closed after. */
export function useTestServer(kind: DatabaseKind, env: Record<string, string> = {}): TestServer {
  const holder = {} as { server?: TestServer };
  beforeAll(async () => {
    holder.server = await startTestServer(kind, env);
  });
  afterAll(async () => {
    await holder.server?.close();
  });
  return new Proxy({} as TestServer, {
    get(_target, property) {
      if (!holder.server) throw new Error('the test server is not started yet');
      const value = Reflect.get(holder.server, property, holder.server);
      return typeof value === 'function' ? value.bind(holder.server) : value;
    },
  });
}
