import { execFile, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import PDFDocument from 'pdfkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDemoTours } from '../../server/integrations/erp/demoData.js';
import { createPostgresDatabase, databaseKinds } from '../helpers/databases.js';
import { startErpServer } from '../helpers/erpServer.js';
import { imageStage, repositoryRoot as root } from '../helpers/image.js';
import { newIssuerKey, RealIssuer } from '../helpers/oidcIssuer.js';

const run = promisify(execFile);
const ADMIN_KEY = 'artifact-admin-key-0123456789abcdef';

/** The image's /app: the build, package.json, and node_modules (here the checkout's, linked). */
let app: string;
let issuer: RealIssuer;
/** Production refuses the demo ERP, so the demo's tours come over HTTP, as a real ERP sends them. */
let erp: Awaited<ReturnType<typeof startErpServer>>;

beforeAll(async () => {
  app = mkdtempSync(path.join(os.tmpdir(), 'tourline-artifact-'));
  await run(process.execPath, [path.join(root, 'build.mjs'), '--outdir', path.join(app, 'dist')], { cwd: root });
  copyFileSync(path.join(root, 'package.json'), path.join(app, 'package.json'));
  symlinkSync(path.join(root, 'node_modules'), path.join(app, 'node_modules'), 'dir');
  const key = await newIssuerKey('RS256');
  issuer = new RealIssuer([1001]);
  issuer.publish([key], key);
  await issuer.start();
  erp = await startErpServer(generateDemoTours);
}, 120_000);

afterAll(async () => {
  await issuer?.kill();
  await erp?.close();
  if (app) rmSync(app, { recursive: true, force: true });
});

describe('the build', () => {
  it('is plain JavaScript that imports only production dependencies and the platform', () => {
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const files = readdirSync(path.join(app, 'dist'), { recursive: true }).map(String);
    expect(files.some((f) => f.endsWith('.ts'))).toBe(false);
    expect(files).toContain(path.join('server', 'main.js'));
    expect(files).toContain(path.join('server', 'cli', 'migrate.js'));
    expect(files).toContain(path.join('server', 'integrations', 'previews', 'pdfWorker.mjs'));
    expect(files.filter((f) => f.startsWith('migrations') && f.endsWith('.sql')).length).toBe(
      readdirSync(path.join(root, 'migrations')).filter((f) => f.endsWith('.sql')).length,
    );
    const imported = new Set<string>();
    for (const file of files.filter((f) => /\.m?js$/.test(f))) {
      const code = readFileSync(path.join(app, 'dist', file), 'utf8');
      // esbuild renames a local `require` to `require2`.
      const specifiers = code.matchAll(
        /^(?:import|export)\s[^;]*?from\s*["']([^"']+)["']|^import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)|\brequire\d*(?:\.resolve)?\(\s*[`"']([^`"'$]+)/gm,
      );
      for (const specifier of [...specifiers].map((m) => m.slice(1).find(Boolean)!).filter((s) => !s.startsWith('.'))) {
        imported.add(specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]);
      }
    }
    const platform = new Set(builtinModules);
    const outside = [...imported].filter((name) => !name.startsWith('node:') && !platform.has(name) && !(name in pkg.dependencies));
    expect(outside).toEqual([]);
    expect([...imported]).toEqual(expect.arrayContaining(['drizzle-orm', 'pg', 'swagger-ui-dist', 'dejavu-fonts-ttf', 'pdfjs-dist']));
  });

  it('renders PDF previews on its worker thread and finds the report fonts from the build', async () => {
    const pdf = await new Promise<Buffer>((resolve) => {
      const doc = new PDFDocument({ size: 'A4' });
      const chunks: Buffer[] = [];
      doc.on('data', (chunk: Buffer) => chunks.push(chunk));
      doc.on('end', () => resolve(Buffer.concat(chunks)));
      doc.text('Lieferschein').end();
    });
    const file = path.join(app, 'page.pdf');
    writeFileSync(file, pdf);
    // A file, not `node -e`: the worker inherits the process's flags.
    const script = `import { readFileSync } from 'node:fs';
      import { createPdfRasterizer } from './dist/server/integrations/previews/pdfRaster.js';
      const rasterizer = createPdfRasterizer();
      const result = await rasterizer.rasterize({ bytes: readFileSync('page.pdf'), page: 1, width: 200, height: 200, maxDpi: 72 });
      // The report's fonts are found when its module loads.
      const report = await import('./dist/server/integrations/report/deliveryReport.js');
      console.log(JSON.stringify({ width: result.width, png: Buffer.from(result.png).subarray(1, 4).toString(), report: typeof report.renderDeliveryReport }));
      await rasterizer.close();`;
    writeFileSync(path.join(app, 'preview.mjs'), script);
    const { stdout } = await run(process.execPath, ['preview.mjs'], { cwd: app });
    expect(JSON.parse(stdout)).toEqual({ width: expect.any(Number), png: 'PNG', report: 'function' });
  });
});

describe.each(databaseKinds)('the service started as the image starts it, on %s', (kind) => {
  const stage = imageStage();
  let base: string;
  let output = '';
  let exited: Promise<number | null>;
  let stop: () => void;

  beforeAll(async () => {
    expect(stage.env.NODE_ENV).toBe('production');
    expect(stage.user).toBe('node');
    const dataDir = path.join(app, `data-${kind}`);
    mkdirSync(dataDir);
    const { DATABASE_URL: _inherited, NODE_ENV: _mode, ...inherited } = process.env;
    const env = {
      ...inherited,
      ...stage.env,
      // What a deployment adds: its port, volume, identity provider, admin key, ERP and document store.
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      OIDC_ISSUER: issuer.url,
      ADMIN_API_KEY: ADMIN_KEY,
      ERP_MODE: 'http',
      ERP_BASE_URL: erp.url,
      DOCUMENT_STORE: 'local',
      ...(kind === 'postgres' ? { DATABASE_URL: await createPostgresDatabase() } : {}),
    };
    const [command, ...args] = stage.cmd;
    expect(command).toBe('node');
    const child = spawn(process.execPath, args, { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    stop = () => child.kill('SIGTERM');
    const deadline = Date.now() + 90_000;
    let url: string | undefined;
    while (!url && Date.now() < deadline) {
      url = /Tourline listening on (http:\/\/\S+) /.exec(output)?.[1];
      if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (!url) throw new Error(`the service did not listen:\n${output}`);
    base = url;
    // The ERP import at start creates the driver accounts.
    while (Date.now() < deadline && !/ERP import of \S+ \(startup\) succeeded/.test(output))
      await new Promise((resolve) => setTimeout(resolve, 100));
  }, 120_000);

  afterAll(async () => {
    stop?.();
    await exited;
  });

  it('passes its health check, the HEALTHCHECK of the image, which probes liveness only', async () => {
    const [command, ...args] = stage.healthcheck;
    expect(command).toBe('node');
    // A database outage must not get healthy containers restarted.
    expect(args.join(' ')).toContain('/livez');
    const port = new URL(base).port;
    await expect(run(process.execPath, args, { env: { ...process.env, PORT: port } })).resolves.toBeDefined();
    expect(output).toContain(`(${kind}, auth oidc, ERP http)`);
  });

  it('logs one production summary without the admin key, and warns that local documents serve one instance', () => {
    const summaries = output.split('\n').filter((line) => line.includes('Production settings:'));
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toContain(`ERP http ${erp.url}`);
    expect(output).not.toContain(ADMIN_KEY);
    expect(output).toMatch(/DOCUMENT_STORE=local keeps documents in \S+data-\w+\/documents .*one instance only/);
  });

  it('serves a driver with a token of the identity provider and refuses one without', async () => {
    const token = await issuer.token(1001);
    const tours = await fetch(`${base}/me/tours`, { headers: { authorization: `Bearer ${token}` } });
    expect(tours.status).toBe(200);
    expect(await tours.json()).toEqual(expect.any(Object));
    expect((await fetch(`${base}/me/tours`)).status).toBe(401);
    const admin = await fetch(`${base}/admin/reviews`, { headers: { 'x-admin-api-key': ADMIN_KEY } });
    expect(admin.status).toBe(200);
    // No development identity provider in production.
    expect(
      (
        await fetch(`${base}/dev/token`, {
          method: 'POST',
          headers: { 'x-admin-api-key': ADMIN_KEY, 'content-type': 'application/json' },
          body: '{"personalnummer":1001}',
        })
      ).status,
    ).toBe(404);
  });

  it('serves its API reference with the assets of swagger-ui', async () => {
    expect((await fetch(`${base}/openapi.json`)).status).toBe(200);
    const css = await fetch(`${base}/docs/assets/swagger-ui.css`);
    expect(css.status).toBe(200);
    expect((await css.text()).length).toBeGreaterThan(1000);
  });

  it('stops cleanly on SIGTERM', async () => {
    stop();
    expect(await exited).toBe(0);
  });
});

describe('the migrate command of the build, with the image environment and only database settings', () => {
  const migrate = (env: Record<string, string>) => {
    const { DATABASE_URL: _inherited, ...inherited } = process.env;
    return run(process.execPath, ['dist/server/cli/migrate.js'], {
      cwd: app,
      env: { ...inherited, ...imageStage().env, LOG_LEVEL: 'silent', ...env },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
    );
  };

  it('migrates PGlite in DATA_DIR', async () => {
    const dataDir = path.join(app, 'data-migrate');
    expect(await migrate({ DATA_DIR: dataDir })).toEqual({ code: 0, stderr: '' });
    expect(readdirSync(path.join(dataDir, 'pglite')).length).toBeGreaterThan(0);
  }, 120_000);

  it('migrates PostgreSQL through DATABASE_DIRECT_URL, again without change, and exits 2 while another session keeps the lock', async () => {
    const url = await createPostgresDatabase();
    // The pooled URL names a database that does not exist: only the direct one may be used.
    const pooled = new URL(url);
    pooled.pathname = '/no_such_database';
    expect(await migrate({ DATABASE_URL: pooled.toString(), DATABASE_DIRECT_URL: url })).toEqual({ code: 0, stderr: '' });
    const client = new pg.Client({ connectionString: url, application_name: 'a slow deploy' });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations');
      expect(rows[0].n).toBe(readdirSync(path.join(root, 'migrations')).filter((f) => f.endsWith('.sql')).length);
      expect(await migrate({ DATABASE_URL: url })).toEqual({ code: 0, stderr: '' });
      await client.query('SELECT pg_advisory_lock(7230001)');
      const refused = await migrate({ DATABASE_URL: url, DATABASE_MIGRATION_LOCK_TIMEOUT_MS: '600' });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/^Migration failed: the migration lock is still held by pid \d+ \(a slow deploy, /);
    } finally {
      await client.end();
    }
  }, 60_000);

  it('exits 1 on a bad setting or an unreachable database', async () => {
    const bad = await migrate({ DATABASE_URL: 'mysql://x' });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('DATABASE_URL: must be a postgres:// URL');
    const missing = await migrate({ DATABASE_URL: 'postgres://nobody:wrong@127.0.0.1:1/none', DATABASE_START_TIMEOUT_MS: '1' });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^Migration failed: database unreachable/);
  });
});
