// Builds the package: ESM bundles of the entry points (the shared rules compiled in, nothing
// imported at run time but the platform's own modules) and .d.ts files beside them.
import { readdir, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import process from 'node:process';
import { build } from 'esbuild';
import { plainTypes } from './plainTypes.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.join(here, 'dist');
export const entryPoints = {
  index: 'index.ts',
  indexeddb: 'storage/indexedDb.ts',
  sqlite: 'storage/sqlite.ts',
  contract: 'storage/contract.ts',
  node: 'node.ts',
  react: 'react.ts',
};

await rm(dist, { recursive: true, force: true });
await build({
  absWorkingDir: here,
  entryPoints,
  outdir: dist,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'neutral',
  // What React Native's Metro and every current browser read without further lowering.
  target: 'es2019',
  // React is the app's own (a peer dependency), imported only by the `./react` entry.
  external: ['node:*', 'react'],
  logLevel: 'warning',
});
// Type declarations only; they keep the shape of the sources (client-sdk/ and the shared types it uses).
execFileSync(process.execPath, [path.join(here, '../node_modules/typescript/bin/tsc'), '-p', path.join(here, 'tsconfig.build.json')], {
  stdio: 'inherit',
});
// Types an app compiles without zod installed (see plainTypes.mjs).
const types = path.join(dist, 'types');
await plainTypes(
  types,
  (await readdir(types, { recursive: true })).filter((f) => f.endsWith('.d.ts')).map((f) => path.join(types, f)),
);
