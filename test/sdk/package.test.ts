import { execFile } from 'node:child_process';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scanAudit } from '../../server/db/schema.js';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { TEST_ADMIN_KEY, useTestServer } from '../helpers/server.js';
import { installInEmptyProject, packSdk } from './pack.js';

const run = promisify(execFile);

/** The ten lines of the package README's quick start: a driver scans a piece of the first delivery. */
const APP = `import { TourlineClient } from '@tourline/client';
const url = process.env.TOURLINE_URL, driver = Number(process.env.DRIVER);
const getToken = async () => (await (await fetch(url + '/dev/token', { method: 'POST', headers: { 'content-type': 'application/json', 'x-admin-api-key': process.env.ADMIN_API_KEY }, body: JSON.stringify({ personalnummer: driver }) })).json()).accessToken;
const client = await TourlineClient.open({ baseUrl: url, getToken, webSocket: null });
const [summary] = await client.loadTours({ date: process.env.DAY });
const line = client.view(summary.id).deliveries[0].positions[0];
await client.scan(line.id);
await client.sync();
console.log(JSON.stringify({ line: line.id, scanned: client.view(summary.id).deliveries[0].positions[0].scannedQuantity, status: client.status() }));
await client.close();
`;

let app: string;
let tarball: string;
beforeAll(async () => {
  tarball = await packSdk();
  app = await installInEmptyProject(tarball);
  await writeFile(path.join(app, 'app.mjs'), APP);
}, 300_000);
afterAll(async () => {
  if (app) await rm(app, { recursive: true, force: true });
  if (tarball) await rm(path.dirname(tarball), { recursive: true, force: true });
});

describe('the packed SDK', () => {
  it('installs alone: built JavaScript and types, no dependency, nothing of the repository', async () => {
    const installed = path.join(app, 'node_modules');
    expect((await readdir(installed)).filter((n) => !n.startsWith('.'))).toEqual(['@tourline']);
    const pkg = JSON.parse(await readFile(path.join(installed, '@tourline/client/package.json'), 'utf8'));
    expect(Object.keys(pkg.exports['.'])[0]).toBe('types');
    const dist = path.join(installed, '@tourline/client/dist');
    for (const file of (await readdir(dist)).filter((n) => n.endsWith('.js'))) {
      const source = await readFile(path.join(dist, file), 'utf8');
      const imports = [...source.matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)].map((m) => m[1]);
      // React, the app's own, only in the entry of the React bindings.
      expect(imports.filter((s) => !s.startsWith('./') && !s.startsWith('node:'))).toEqual(file === 'react.js' ? ['react'] : []);
      if (file !== 'node.js' && !file.startsWith('chunk-')) expect(imports.filter((s) => s.startsWith('node:'))).toEqual([]);
    }
    const { stdout } = await run(
      'node',
      ['--input-type=module', '-e', "import('@tourline/client/node').then((m) => console.log(typeof m.FileStore.open))"],
      { cwd: app },
    );
    expect(stdout.trim()).toBe('function');
  });
});

describe.each(databaseKinds)('an app that installed the packed SDK, on %s', (kind) => {
  const server = useTestServer(kind);

  it('runs a driver action against the service with ten lines of code', async () => {
    const driver = 80_000 + Math.floor(Math.random() * 9_000);
    const seeded = await newTour(server.db, {
      accountId: driver,
      positions: [{ scannable: true, quantity: 2, scannedQuantity: 0, state: 'InProgress' }],
    });
    const { stdout } = await run('node', ['app.mjs'], {
      cwd: app,
      env: { ...process.env, TOURLINE_URL: server.url, ADMIN_API_KEY: TEST_ADMIN_KEY, DRIVER: String(driver), DAY: seeded.tour.tourDate },
    });
    const result = JSON.parse(stdout);
    expect(result).toMatchObject({ scanned: 1, status: { pendingCount: 0, rejected: [], lastError: null } });
    const audit = await server.db.select().from(scanAudit).where(eq(scanAudit.deliveryItemId, result.line));
    expect(audit).toHaveLength(1);
  }, 60_000);
});
