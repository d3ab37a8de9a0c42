import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresDatabase } from '../helpers/databases.js';
import { repositoryRoot as root } from '../helpers/image.js';
import { newIssuerKey, RealIssuer } from '../helpers/oidcIssuer.js';

/** A span as the OTLP/HTTP JSON exporter sends it. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string; intValue?: number | string } }[];
}
const SERVER = 2;
const CLIENT = 3;
const attribute = (span: OtlpSpan, key: string) => span.attributes.find((a) => a.key === key)?.value.stringValue;

/** Stands in for an OpenTelemetry collector: keeps every span posted to /v1/traces, with the service name. */
async function startCollector() {
  const received: { service: string | undefined; span: OtlpSpan }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        const payload = JSON.parse(body) as {
          resourceSpans: { resource: OtlpSpan; scopeSpans: { spans: OtlpSpan[] }[] }[];
        };
        for (const { resource, scopeSpans } of payload.resourceSpans)
          for (const { spans } of scopeSpans)
            for (const span of spans) received.push({ service: attribute(resource, 'service.name'), span });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const ADMIN_KEY = 'tracing-admin-key-0123456789abcdef';
const querySecret = 'eyJhbGciOiJSUzI1NiJ9.a-token-in-the-query';
let app: string;
let issuer: RealIssuer;
let collector: Awaited<ReturnType<typeof startCollector>>;

beforeAll(async () => {
  // The build, as production runs it: the tracing hooks must see the modules load as they do there.
  app = mkdtempSync(path.join(os.tmpdir(), 'tourline-tracing-'));
  await promisify(execFile)(process.execPath, [path.join(root, 'build.mjs'), '--outdir', path.join(app, 'dist')], { cwd: root });
  symlinkSync(path.join(root, 'node_modules'), path.join(app, 'node_modules'), 'dir');
  const key = await newIssuerKey('RS256');
  issuer = new RealIssuer([1001]);
  issuer.publish([key], key);
  await issuer.start();
  collector = await startCollector();
}, 120_000);

afterAll(async () => {
  await issuer?.kill();
  await collector?.close();
  if (app) rmSync(app, { recursive: true, force: true });
});

/** Starts the built service with `settings`, runs `work` against it, stops it with SIGTERM; its output and exit code. */
async function runService(settings: Record<string, string>, work: (url: string) => Promise<void> = async () => {}) {
  const {
    DATABASE_URL: _db,
    NODE_ENV: _mode,
    ...inherited
  } = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')));
  const env = {
    ...inherited,
    NODE_ENV: 'development',
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: mkdtempSync(path.join(app, 'data-')),
    OIDC_ISSUER: issuer.url,
    ADMIN_API_KEY: ADMIN_KEY,
    DATABASE_URL: await createPostgresDatabase(),
    ERP_IMPORT_ENABLED: 'false',
    ...settings,
  };
  const child = spawn(process.execPath, ['dist/server/main.js'], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  let url: string | undefined;
  while (!url && child.exitCode === null && Date.now() < deadline) {
    url = /Tourline listening on (http:\/\/\S+) /.exec(output)?.[1];
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  try {
    if (url) await work(url);
  } finally {
    child.kill('SIGTERM');
  }
  return { code: await exited, output };
}

describe('traces, with an OTLP endpoint configured', () => {
  it('sends a server span per request, named by its route, with the request id, and its queries and identity provider calls as children', async () => {
    const run = await runService(
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`, OTEL_SERVICE_NAME: 'tourline-test' },
      async (url) => {
        // The start fetched the key set; a token of a key rotated in since makes the request fetch it again.
        const rotated = await newIssuerKey('RS256');
        issuer.publish([rotated], rotated);
        const token = await issuer.token(1001);
        const response = await fetch(`${url}/me/tours`, { headers: { authorization: `Bearer ${token}`, 'x-request-id': 'trace-me-1' } });
        expect(response.status).toBeLessThan(500);
        const leaked = await fetch(`${url}/me/tours?date=2026-01-01&access_token=${querySecret}&Token=${querySecret}`, {
          headers: { 'x-request-id': 'trace-me-2' },
        });
        expect(leaked.status).toBe(401);
      },
    );
    // Stopped with SIGTERM before the batch's delay (5 s): these spans were sent by the shutdown's flush.
    expect(run.code, run.output).toBe(0);
    const spans = collector.received.map((r) => r.span);
    const server = spans.find((s) => s.kind === SERVER && attribute(s, 'tourline.request_id') === 'trace-me-1');
    expect(server, JSON.stringify(spans.map((s) => s.name))).toBeDefined();
    expect(server!.name).toBe('GET /me/tours');
    expect(attribute(server!, 'http.route')).toBe('/me/tours');
    const children = spans.filter((s) => s.traceId === server!.traceId && s.parentSpanId === server!.spanId);
    expect(children.some((s) => attribute(s, 'db.system') === 'postgresql' || attribute(s, 'db.system.name') === 'postgresql')).toBe(true);
    // The key set of the identity provider, fetched to check the token: a client span.
    expect(children.some((s) => s.kind === CLIENT && attribute(s, 'url.full')?.startsWith(issuer.url))).toBe(true);
    expect(new Set(collector.received.map((r) => r.service))).toEqual(new Set(['tourline-test']));
    // A credential in the query is in no span, nor in the log.
    const refused = spans.find((s) => s.kind === SERVER && attribute(s, 'tourline.request_id') === 'trace-me-2');
    expect(attribute(refused!, 'url.query')).toBe('date=2026-01-01&access_token=REDACTED&Token=REDACTED');
    expect(JSON.stringify(spans)).not.toContain(querySecret);
    expect(run.output).not.toContain(querySecret);
  }, 90_000);

  it('stops the start on an endpoint that is not a URL, naming the variable', async () => {
    const run = await runService({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' });
    expect(run.code).toBe(1);
    expect(run.output).toContain('OTEL_EXPORTER_OTLP_ENDPOINT: must be an http(s) URL');
  }, 60_000);
});

describe('traces, without an endpoint', () => {
  it('sends nothing, also with OTEL_TRACES_EXPORTER=none beside an endpoint', async () => {
    const before = collector.received.length;
    const runs: Record<string, string>[] = [{}, { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_TRACES_EXPORTER: 'none' }];
    for (const settings of runs) {
      const run = await runService(settings, async (url) => {
        expect((await fetch(`${url}/admin/reviews`, { headers: { 'x-admin-api-key': ADMIN_KEY } })).status).toBe(200);
      });
      expect(run.code, run.output).toBe(0);
    }
    expect(collector.received.length).toBe(before);
  }, 90_000);
});
