import { afterAll, beforeAll } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { accounts } from '../../server/db/schema.js';
import { startServer, type RunningServer, type StartOptions } from '../../server/server.js';
import { createPostgresDatabase, type DatabaseKind } from './databases.js';

export const TEST_ADMIN_KEY = 'test-admin-key-0123456789abcdef';
/** The default sync role (OIDC_SYNC_ROLE): sends any driver's tour. */
export const SYNC_ROLE = 'tourline-sync';

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

export class TestServer {
  constructor(readonly running: RunningServer) {}

  get url() {
    return this.running.url;
  }
  get ctx() {
    return this.running.ctx;
  }
  get db() {
    return this.running.ctx.database.db;
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

  /** A development token for an account, seeding the account first; `roles` go into the role claim. */
  async token(personalnummer: number, roles?: string[]): Promise<string> {
    await this.seedAccount(personalnummer);
    const response = await this.post('/dev/token', { personalnummer, roles }, { admin: true });
    if (response.status !== 200) throw new Error(`token: ${response.status} ${response.text}`);
    return response.body.accessToken;
  }

  close() {
    return this.running.close();
  }
}

export async function testConfig(kind: DatabaseKind, env: Record<string, string> = {}) {
  return loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    ADMIN_API_KEY: TEST_ADMIN_KEY,
    ERP_IMPORT_ENABLED: 'false',
    ...(kind === 'postgres' ? { DATABASE_URL: await createPostgresDatabase() } : {}),
    ...env,
  });
}

export async function startTestServer(kind: DatabaseKind, env: Record<string, string> = {}, options: StartOptions = {}) {
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
