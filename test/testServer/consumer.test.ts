import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packPackage, packSdk } from '../sdk/pack.js';

const run = promisify(execFile);
const packageDir = path.resolve(import.meta.dirname, '../../test-server');
/** The app's own test runner, the version this repository runs (so npm's cache usually has it). */
const vitestVersion = (createRequire(import.meta.url)('vitest/package.json') as { version: string }).version;
/**
 * What the package leaves out: PDF rendering, image processing, S3, the tracing SDK, the API docs
 * UI (`@opentelemetry/api`, the interface drizzle and prom-client import, is a few files).
 */
const heavy = /^(pdfkit|pdfjs-dist|sharp|@img\/|@napi-rs\/|@aws-sdk\/|@opentelemetry\/(?!api$)|swagger-ui-dist|dejavu-fonts-ttf)/;
const packagesIn = async (modules: string) =>
  (
    await Promise.all(
      (await readdir(modules)).map(async (name) =>
        name.startsWith('@') ? (await readdir(path.join(modules, name))).map((inner) => `${name}/${inner}`) : [name],
      ),
    )
  ).flat();

let app: string;
const tarballs: string[] = [];
beforeAll(async () => {
  tarballs.push(await packSdk(), await packPackage(packageDir));
  app = await mkdtemp(path.join(os.tmpdir(), 'tourline-app-'));
  await writeFile(path.join(app, 'package.json'), JSON.stringify({ name: 'driver-app', private: true, type: 'module' }));
  // From the registry, as an app team installs: the two tarballs and their dependencies, and vitest.
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs, `vitest@${vitestVersion}`], { cwd: app });
  await copyFile(path.join(packageDir, 'example/delivery.test.ts'), path.join(app, 'delivery.test.ts'));
}, 600_000); // two packs (each builds its types) and an install: minutes on a loaded machine
afterAll(async () => {
  if (app) await rm(app, { recursive: true, force: true });
  for (const tarball of tarballs) await rm(path.dirname(tarball), { recursive: true, force: true });
});

describe('an app project with the packed SDK and the packed test server', () => {
  it('installs without the heavy parts of the service', async () => {
    const installed = await packagesIn(path.join(app, 'node_modules'));
    expect(installed.filter((name) => heavy.test(name))).toEqual([]);
    expect(installed).toEqual(expect.arrayContaining(['@tourline/client', '@tourline/test-server', '@electric-sql/pglite', 'express']));
    const pkg = JSON.parse(await readFile(path.join(app, 'node_modules/@tourline/test-server/package.json'), 'utf8'));
    expect(Object.keys(pkg.dependencies)).not.toContain('@tourline/client');
  });

  it("runs the README's test: a delivery worked offline, an answer lost, every scan applied once", async () => {
    const { stdout } = await run(process.execPath, [path.join(app, 'node_modules/vitest/vitest.mjs'), 'run', '--reporter=verbose'], {
      cwd: app,
      env: { ...process.env, NODE_ENV: 'test', TOURLINE_TEST_TARGET: '', NO_COLOR: '1', FORCE_COLOR: '0' },
    });
    expect(stdout).toContain('✓ delivery.test.ts > works a delivery offline and the service applies every scan exactly once');
    expect(stdout).toMatch(/Tests\s+1 passed/);
  }, 120_000);
});
