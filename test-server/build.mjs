// Builds the package: the test server with the service, the shared rules and the SDK's admin client
// compiled into one ESM module (the npm packages it uses stay imports, listed as its dependencies),
// the migrations beside it, and .d.ts files.
import { cp, rm } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import process from 'node:process';
import { build } from 'esbuild';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..');

await rm(path.join(here, 'dist'), { recursive: true, force: true });
await rm(path.join(here, 'migrations'), { recursive: true, force: true });
await build({
  absWorkingDir: here,
  entryPoints: ['index.ts'],
  // Two folders down, as server/db/migrate.ts sits in the repository: its `../../migrations` is the package's.
  outfile: path.join(here, 'dist/lib/index.js'),
  bundle: true,
  packages: 'external',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});
// The migrator reads the SQL files and the journal, not drizzle-kit's snapshots.
await cp(path.join(root, 'migrations'), path.join(here, 'migrations'), {
  recursive: true,
  filter: (source) => !source.includes(`${path.sep}meta${path.sep}`) || source.endsWith('_journal.json'),
});
// Read relative to the module when a test renders PDF previews (pdfjs-dist installed).
await cp(path.join(root, 'server/integrations/previews/pdfWorker.mjs'), path.join(here, 'dist/lib/pdfWorker.mjs'));
execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(here, 'tsconfig.build.json')], {
  stdio: 'inherit',
});
