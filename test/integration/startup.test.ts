import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { SyncSocket } from '../helpers/wsClient.js';
import { databaseKinds } from '../helpers/databases.js';
import { startTestServer, TEST_ADMIN_KEY } from '../helpers/server.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
// `npx tsx` resolves to this binary; calling it directly saves npx's start-up time.
const tsx = path.join(root, 'node_modules/.bin/tsx');

interface Service {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function startService(env: Record<string, string>): Service {
  const { DATABASE_URL: _ignored, ...inherited } = process.env;
  const child = spawn(tsx, ['server/main.ts'], {
    cwd: root,
    env: { ...inherited, NODE_ENV: 'development', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr!.on('data', (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net
      .createServer()
      .listen(0, '127.0.0.1', () => {
        const { port } = server.address() as net.AddressInfo;
        server.close(() => resolve(port));
      })
      .on('error', reject);
  });
}

async function waitForHealth(base: string, service: Service) {
  const deadline = Date.now() + 100_000;
  let exitCode: number | null | undefined;
  void service.exited.then((code) => {
    exitCode = code;
  });
  while (Date.now() < deadline) {
    if (exitCode !== undefined) throw new Error(`the service exited with ${exitCode}:\n${service.output()}`);
    const ok = await fetch(`${base}/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no healthy service at ${base}:\n${service.output()}`);
}

/** A request whose body arrives in two parts, so the server is busy with it while we act. */
function slowRequest(port: number, adminKey: string, body: string, agent: http.Agent | false = false) {
  const request = http.request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: '/dev/token',
    agent,
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-admin-api-key': adminKey },
  });
  const answer = new Promise<{ status: number; body: string; connection?: string }>((resolve, reject) => {
    request.on('response', (response) => {
      let text = '';
      response.on('data', (chunk) => {
        text += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode!, body: text, connection: response.headers.connection }));
    });
    request.on('error', reject);
  });
  const half = Math.floor(body.length / 2);
  request.write(body.slice(0, half));
  return { answer, finish: () => request.end(body.slice(half)) };
}

// Loading the whole service with tsx and creating a fresh PGlite takes seconds, more on a busy machine.
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A production start that needs nothing outside: the issuer and the ERP are only asked later, and import is off. */
const production = {
  NODE_ENV: 'production',
  OIDC_ISSUER: 'http://127.0.0.1:9/issuer',
  ADMIN_API_KEY: 'startup-admin-key-0123456789abcdef',
  ERP_MODE: 'http',
  ERP_BASE_URL: 'http://127.0.0.1:9/erp',
  ERP_IMPORT_ENABLED: 'false',
  DOCUMENT_STORE: 'local',
  SHUTDOWN_DRAIN_MS: '0',
  LOG_LEVEL: 'info',
};

describe('starting and stopping the service', () => {
  const cleanup: (() => void)[] = [];
  afterEach(() => {
    while (cleanup.length) cleanup.pop()!();
  });
  /** The service in a process of its own on a fresh data directory, removed after the test. */
  const launch = (env: Record<string, string>) => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tourline-start-'));
    const service = startService({ DATA_DIR: dataDir, ...env });
    cleanup.push(() => {
      service.child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    });
    return { service, dataDir };
  };
  /** As `launch`, listening on a free port of 127.0.0.1, once it answers `/health`. */
  const serve = async (env: Record<string, string>) => {
    const port = await freePort();
    const { service, dataDir } = launch({ PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env });
    const base = `http://127.0.0.1:${port}`;
    await waitForHealth(base, service);
    return { service, dataDir, port, base };
  };

  it('starts on a fresh data directory, prints and keeps an admin key, and on SIGTERM finishes a running request and exits 0', async () => {
    const { service, dataDir, port, base } = await serve({ ERP_IMPORT_ENABLED: 'false' });
    const health = await fetch(`${base}/health`);
    expect(await health.text()).toBe('ok');
    const adminKey = readFileSync(path.join(dataDir, 'admin-api-key'), 'utf8').trim();
    expect(adminKey.length).toBeGreaterThanOrEqual(32);
    expect(service.output()).toContain(adminKey);

    const running = slowRequest(port, adminKey, JSON.stringify({ personalnummer: 424242 }));
    await sleep(300);
    service.child.kill('SIGTERM');
    await sleep(300);
    // Stopped taking requests, but still busy with the one that started before.
    await expect(fetch(`${base}/health`, { signal: AbortSignal.timeout(2000) })).rejects.toThrow();
    running.finish();
    const answer = await running.answer;
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'not_found', status: 404 });
    expect(await service.exited).toBe(0);
  }, 120_000);

  it('on SIGTERM turns not ready, serves on for SHUTDOWN_DRAIN_MS, then closes WebSockets with 1012 and exits 0', async () => {
    // The demo ERP import at start creates the demo drivers (1001, ...).
    const { service, dataDir, base } = await serve({ SHUTDOWN_DRAIN_MS: '1500' });
    const adminKey = readFileSync(path.join(dataDir, 'admin-api-key'), 'utf8').trim();
    const mint = () =>
      fetch(`${base}/dev/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-admin-api-key': adminKey },
        body: '{"personalnummer":1001}',
      });
    await expect.poll(async () => (await mint()).status, { timeout: 60_000, interval: 200 }).toBe(200);
    const { accessToken } = (await (await mint()).json()) as { accessToken: string };
    const socket = await SyncSocket.open(base, { token: accessToken });
    expect((await fetch(`${base}/readyz`)).status).toBe(200);

    const signalled = Date.now();
    service.child.kill('SIGTERM');
    await sleep(400);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ code: 'upstream_unavailable', errors: [{ path: 'draining' }] });
    // Still serving during the drain: liveness, health and the open socket.
    expect((await fetch(`${base}/livez`)).status).toBe(200);
    expect((await fetch(`${base}/health`)).status).toBe(200);
    socket.send({ type: 'ping' });
    await socket.next((m) => m.type === 'pong');

    const closed = await socket.closed;
    expect(closed.code).toBe(1012);
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(1500);
    expect(await service.exited).toBe(0);
    // A planned drain is no incident: no line at error level, and a last line with its counts.
    const lines = service
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
    expect(lines.at(-1)).toMatchObject({ level: 30, msg: 'Tourline stopped', webSocketsClosed: 1 });
  }, 150_000);

  it('refuses to start with a bad PORT and names the variable', async () => {
    const { service } = launch({ PORT: 'abc', ERP_IMPORT_ENABLED: 'false' });
    const code = await service.exited;
    expect(code).not.toBe(0);
    expect(service.output()).toMatch(/PORT/);
  }, 60_000);

  it('refuses a production start without ERP_MODE and names the variable', async () => {
    const { service } = launch({ ...production, ERP_MODE: '' });
    expect(await service.exited).toBe(1);
    expect(service.output()).toContain('ERP_MODE: is required in production');
  }, 60_000);

  it('logs one production summary without the admin key, and warns once that local documents serve one instance', async () => {
    const { service, dataDir } = await serve(production);
    // The summary follows the listening line.
    while (!service.output().includes('Production settings:')) await sleep(50);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    const lines = service.output().split('\n');
    const summaries = lines.filter((line) => line.includes('Production settings:'));
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toContain(`ERP http ${production.ERP_BASE_URL}`);
    expect(summaries[0]).toContain(`database PGlite in ${dataDir}`);
    const warnings = lines.filter((line) => line.includes('one instance only'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(path.join(dataDir, 'documents'));
    expect(service.output()).not.toContain(production.ADMIN_API_KEY);
  }, 120_000);
});

describe.each(databaseKinds)('stopping the server with keep-alive clients on %s', (kind) => {
  it('answers the running request with Connection: close and stops without waiting for the idle timeout', async () => {
    const api = await startTestServer(kind);
    const agent = new http.Agent({ keepAlive: true });
    try {
      const port = Number(new URL(api.url).port);
      // An idle keep-alive connection, and a second one busy with a request.
      await new Promise<void>((resolve) =>
        http.get({ host: '127.0.0.1', port, path: '/health', agent }, (r) => {
          r.resume();
          r.on('end', resolve);
        }),
      );
      const running = slowRequest(port, TEST_ADMIN_KEY, JSON.stringify({ personalnummer: 424243 }), agent);
      await sleep(200);
      const started = Date.now();
      const closed = api.close().then(() => Date.now() - started);
      await sleep(200);
      running.finish();
      const answer = await running.answer;
      expect(answer).toMatchObject({ status: 404, connection: 'close' });
      expect(await closed).toBeLessThan(5_000);
    } finally {
      agent.destroy();
      await api.close();
    }
  }, 90_000);
});
