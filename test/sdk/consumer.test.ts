import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeBlocks, compileBare, compileWithPlatforms, DOCUMENTS } from './consumer.js';
import { installInEmptyProject, packSdk } from './pack.js';

let app: string;
let tarball: string;
beforeAll(async () => {
  tarball = await packSdk();
  app = await installInEmptyProject(tarball);
}, 300_000);
afterAll(async () => {
  if (app) await rm(app, { recursive: true, force: true });
  if (tarball) await rm(path.dirname(tarball), { recursive: true, force: true });
});

describe('a TypeScript app on the packed SDK (strict, skipLibCheck: false)', { timeout: 120_000 }, () => {
  it('compiles with only the tarball and TypeScript installed: no zod, the browser and React Native WebSockets fit', async () => {
    expect((await readdir(path.join(app, 'node_modules'))).filter((n) => !n.startsWith('.'))).toEqual(['@tourline']);
    expect(await compileBare(app)).toBe('');
  });

  it("compiles every TypeScript block of the SDK's docs, the node and react entry points, and ws's WebSocket without a cast", async () => {
    const blocks = (await Promise.all(DOCUMENTS.map(codeBlocks))).flat();
    expect(blocks.length).toBeGreaterThanOrEqual(9);
    expect(await compileWithPlatforms(app)).toBe('');
  });
});

describe('the entry-point lists', () => {
  it.each(DOCUMENTS)('of %s name every export of the package', async (doc) => {
    const root = path.resolve(import.meta.dirname, '../..');
    const pkg = JSON.parse(await readFile(path.join(root, 'client-sdk/package.json'), 'utf8'));
    const text = await readFile(path.join(root, doc), 'utf8');
    const entries = Object.keys(pkg.exports)
      .filter((key) => key !== './package.json')
      .map((key) => `\`@tourline/client${key.slice(1)}\``);
    expect(entries.filter((entry) => !text.includes(entry))).toEqual([]);
  });
});
