import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ESLint } from 'eslint';
import * as prettier from 'prettier';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: root });

/** The rules a piece of code breaks when it stands at `file`. */
async function broken(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${root}/${file}` });
  return result.messages.map((message) => message.ruleId ?? message.message);
}

describe('the layers of the design', () => {
  it('hold over the whole tree (npm run lint is clean)', { timeout: 180_000 }, async () => {
    const results = await eslint.lintFiles(['.']);
    const problems = results.flatMap((result) =>
      result.messages.map((message) => `${result.filePath.slice(root.length)}:${message.line} ${message.ruleId}: ${message.message}`),
    );
    expect(problems).toEqual([]);
  });

  it.each([
    [
      'a route importing the schema',
      'server/http/routes/layerFixture.ts',
      "import { tours } from '../../db/schema.js';\nexport const t = tours;\n",
    ],
    [
      'the system routes importing the schema',
      'server/http/routes/system.ts',
      "import { accounts } from '../../db/schema.js';\nexport const a = accounts;\n",
    ],
    [
      'the development identity routes importing the schema',
      'server/http/routes/devIdentity.ts',
      "import { accounts } from '../../db/schema.js';\nexport const a = accounts;\n",
    ],
    [
      'a route importing a part of the schema',
      'server/http/routes/layerFixture.ts',
      "import { tours } from '../../db/tables/deliveries.js';\nexport const t = tours;\n",
    ],
    ['a route importing drizzle', 'server/http/routes/layerFixture.ts', "import { eq } from 'drizzle-orm';\nexport const e = eq;\n"],
    [
      'a type-only import of the schema in a route',
      'server/http/layerFixture.ts',
      "import type { tours } from '../db/schema.js';\nexport type T = typeof tours;\n",
    ],
    [
      'the engine importing a query',
      'server/engine/layerFixture.ts',
      "import { listTourSummaries } from '../queries/tourSummaries.js';\nexport const l = listTourSummaries;\n",
    ],
    [
      'the engine importing the HTTP layer',
      'server/engine/layerFixture.ts',
      "import { route } from '../http/route.js';\nexport const r = route;\n",
    ],
    [
      'a query importing the engine',
      'server/queries/layerFixture.ts',
      "import { applyEvent } from '../engine/apply.js';\nexport const a = applyEvent;\n",
    ],
    [
      'shared importing the server',
      'shared/rules/layerFixture.ts',
      "import { DomainError } from '../../server/errors.js';\nexport const d = DomainError;\n",
    ],
    [
      'the SDK importing the server',
      'client-sdk/layerFixture.ts',
      "import { DomainError } from '../server/errors.js';\nexport const d = DomainError;\n",
    ],
  ])('refuse %s', async (_name, file, code) => {
    expect(await broken(file, code)).toContain('no-restricted-imports');
  });

  it.each([
    ['an insert', 'export const w = (db: any) => db.insert(table).values({});\ndeclare const table: unknown;\n'],
    ['an update on a transaction', 'export const w = (tx: any) => tx.update(table).set({});\ndeclare const table: unknown;\n'],
    ['a delete through a context', 'export const w = (ctx: any) => ctx.db.delete(table);\ndeclare const table: unknown;\n'],
    ['SQL that writes', "import { sql } from 'drizzle-orm';\nexport const w = sql`UPDATE tours SET state = 'x'`;\n"],
  ])('refuse %s in the read layer', async (_name, code) => {
    expect(await broken('server/queries/layerFixture.ts', code)).toContain('no-restricted-syntax');
  });

  it('let the read layer read and clear a map of its own', async () => {
    const code =
      "import { sql } from 'drizzle-orm';\nexport const r = sql`SELECT id FROM tours WHERE state = 'x'`;\n" +
      'const cache = new Map<string, number>();\nexport const forget = (key: string) => cache.delete(key);\n';
    expect(await broken('server/queries/layerFixture.ts', code)).toEqual([]);
  });

  it('let a route import a query and an engine operation', async () => {
    const code =
      "import { listTourSummaries } from '../../queries/tourSummaries.js';\nimport { applyEvent } from '../../engine/apply.js';\n" +
      'export const both = [listTourSummaries, applyEvent];\n';
    expect(await broken('server/http/routes/layerFixture.ts', code)).toEqual([]);
  });
});

describe('the formatting', () => {
  it('follows Prettier over the whole tree (npm run lint checks it too)', { timeout: 180_000 }, async () => {
    // The CLI, not the API: it alone expands the tree and honours .gitignore and .prettierignore as npm run lint does.
    const cli = fileURLToPath(new URL('../../node_modules/prettier/bin/prettier.cjs', import.meta.url));
    const unformatted = await promisify(execFile)(process.execPath, [cli, '--list-different', '.'], { cwd: root, maxBuffer: 1 << 24 }).then(
      () => '',
      (failure: { stdout?: string; stderr?: string }) => `${failure.stdout ?? ''}${failure.stderr ?? ''}`,
    );
    expect(unformatted.split('\n').filter(Boolean)).toEqual([]);
  });

  it.each([
    'migrations/0000_init.sql',
    'migrations/meta/_journal.json',
    'client-sdk/dist/index.js',
    'dist/server/main.js',
    'package-lock.json',
    'bench-results.json',
    'docs/testing.md',
  ])('leaves out what is generated or hand-laid: %s', async (file) => {
    expect((await prettier.getFileInfo(`${root}/${file}`, { ignorePath: `${root}/.prettierignore` })).ignored).toBe(true);
  });

  it('checks the sources with the project settings', async () => {
    const options = await prettier.resolveConfig(`${root}/server/main.ts`);
    expect(options).toMatchObject({ printWidth: 140, singleQuote: true });
    expect(await prettier.check("export const a = 'x';\n", { ...options, filepath: 'a.ts' })).toBe(true);
    expect(await prettier.check('export const a = "x"\n', { ...options, filepath: 'a.ts' })).toBe(false);
  });
});
