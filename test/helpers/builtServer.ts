import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { inject } from 'vitest';
import { createDevIdentityProvider } from '../../server/auth/devIdentityProvider.js';
import type { Db } from '../../server/db/client.js';
import * as schema from '../../server/db/schema.js';
import { startErpServer } from './erpServer.js';
import { imageStage } from './image.js';

/** An OIDC issuer on a port of its own (discovery and key set) that mints tokens for any driver, with roles. */
async function startIssuer(ttlSeconds: number) {
  const idp = await createDevIdentityProvider({
    audience: 'tourline',
    personalnummerClaim: 'personalnummer',
    syncRoleClaim: 'roles',
    backOfficeRoleClaim: 'roles',
    backOfficeRole: 'tourline-back-office',
    nameClaim: 'name',
    devTokenTtlSeconds: ttlSeconds,
  });
  const server = http.createServer((req, res) => {
    const body = req.url === '/jwks' ? idp.jwks : req.url === '/.well-known/openid-configuration' ? idp.metadata(url) : undefined;
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(body ?? {}));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    token: async (personalnummer: number, roles?: string[]) => (await idp.mint(url, personalnummer, roles)).accessToken,
    backOfficeToken: async (name: string) => (await idp.mintBackOffice(url, name)).accessToken,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function freePort() {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

type Problems = { errors?: { path: string; message: string }[] };
export interface BuiltServer {
  url: string;
  /** The tests' own connection to the service's database. */
  db: Db;
  token(personalnummer: number, roles?: string[]): Promise<string>;
  /** A token of the back-office role for the person of this name. */
  backOfficeToken(name: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * The built service (globalSetup `buildSetup.ts`) in a child process, started with the image's
 * CMD and ENV plus what a deployment adds: the test's settings, a port, a data directory, an
 * identity provider, an ERP and a document store. Resolves once `/readyz` answers 200, or 503 for the
 * start's checks of the issuer and the document store alone.
 */
export async function startBuiltServer(testSettings: Record<string, string>): Promise<BuiltServer> {
  // The token lifetime of the development identity provider is the test issuer's here.
  const { DEV_TOKEN_TTL_SECONDS: ttl = '3600', ...settings } = testSettings;
  const stage = imageStage();
  const issuer = await startIssuer(Number(ttl));
  const erp = await startErpServer();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tourline-data-'));
  const port = await freePort();
  const { PATH, HOME, TMPDIR } = process.env;
  const env = {
    ...Object.fromEntries(Object.entries({ PATH, HOME, TMPDIR }).filter(([, v]) => v !== undefined)),
    ...stage.env,
    DATA_DIR: dataDir,
    OIDC_ISSUER: issuer.url,
    // Production names its ERP and document store; a test that needs another store sets its own.
    ERP_MODE: 'http',
    ERP_BASE_URL: erp.url,
    DOCUMENT_STORE: 'local',
    // Production waits 5 s for load balancers before closing; no balancer here.
    SHUTDOWN_DRAIN_MS: '0',
    ...settings,
    NODE_ENV: stage.env.NODE_ENV,
    PORT: String(port),
    HOST: '127.0.0.1',
  };
  const [command, ...args] = stage.cmd;
  if (command !== 'node') throw new Error(`the image's CMD runs ${command}, not node`);
  const child = spawn(process.execPath, args, { cwd: inject('builtApp'), env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const cleanUp = async () => {
    await issuer.close();
    await erp.close();
    rmSync(dataDir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      await cleanUp();
      throw new Error(`the built service ${child.exitCode === null ? 'did not get ready' : `exited with ${child.exitCode}`}:\n${output}`);
    }
    const answer = await fetch(`${url}/readyz`).then(
      async (r) => ({ status: r.status, body: (await r.json().catch(() => ({}))) as Problems }),
      () => ({ status: 0, body: {} as Problems }),
    );
    // Serving, and waiting only for a dependency a test may keep down on purpose (the issuer, the store).
    const waitsForStartChecks =
      answer.status === 503 &&
      !!answer.body.errors?.every((e) => ['issuer', 'documents'].includes(e.path) && !e.message.endsWith('not answered yet'));
    if (answer.status === 200 || waitsForStartChecks) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  const pool = new pg.Pool({ connectionString: settings.DATABASE_URL, max: 4 });
  let closed: Promise<void> | undefined;
  return {
    url,
    db: drizzle({ client: pool, schema }) as unknown as Db,
    token: issuer.token,
    backOfficeToken: issuer.backOfficeToken,
    close: () =>
      (closed ??= (async () => {
        child.kill('SIGTERM');
        const code = await exited;
        await pool.end();
        await cleanUp();
        if (code !== 0) throw new Error(`the built service exited with ${code} on SIGTERM:\n${output}`);
      })()),
  };
}
