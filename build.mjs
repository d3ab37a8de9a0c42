// Builds the service for production: every module of server/ and shared/ compiled to JavaScript
// one file each (ESM, the same paths under dist/), the files they read at run time beside them
// (the migrations, the PDF worker), the back-office console (one script, its page and styles) and the client SDK package. Types are checked by `npm run typecheck`.
// `node build.mjs [--outdir <dir>]`; dist/ by default.
import { cp, readdir, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const root = path.dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({ options: { outdir: { type: 'string', default: path.join(root, 'dist') } } });
const outdir = path.resolve(values.outdir);

const files = async (dir) => (await readdir(path.join(root, dir), { recursive: true })).map((f) => path.join(dir, f));
const sources = [...(await files('server')), ...(await files('shared'))];

await rm(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  // consoleFromSources.ts bundles the console for the sources only (the build brings its own bundle below).
  entryPoints: sources.filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('consoleFromSources.ts')),
  outdir,
  outbase: '.',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});
// Read at run time relative to the modules: migrations (server/db/client.ts) and the worker (pdfRaster.ts).
await cp(path.join(root, 'migrations'), path.join(outdir, 'migrations'), { recursive: true });
for (const file of sources.filter((f) => f.endsWith('.mjs'))) await cp(path.join(root, file), path.join(outdir, file));
// The console as the service serves it from dist/console (server/http/console.ts).
await build({
  absWorkingDir: root,
  entryPoints: ['console/src/main.ts'],
  outfile: path.join(outdir, 'console/app.js'),
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  logLevel: 'warning',
});
for (const file of ['index.html', 'console.css']) await cp(path.join(root, 'console', file), path.join(outdir, 'console', file));
