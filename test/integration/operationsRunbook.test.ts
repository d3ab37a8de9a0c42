import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configVariables } from '../../server/config/variables.js';
import { createPostgresDatabase, databaseKinds } from '../helpers/databases.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The commands of docs/operations.md. A block fenced as `sh runnable` is run here with bash, against
 * a service started for it (TOURLINE_URL, METRICS_URL) and a DATA_DIR and BACKUP_DIR of its own; it
 * must exit 0. Every other `sh` block needs what this machine lacks (a PostgreSQL of the server's
 * version for pg_dump, docker, a long-running service); the npm scripts, files, settings and bench
 * options those blocks name are checked to exist.
 */
const root = path.resolve(import.meta.dirname, '../..');
const runbook = readFileSync(path.join(root, 'docs/operations.md'), 'utf8');
const blocks = [...runbook.matchAll(/^```sh( runnable)?\n([\s\S]*?)^```$/gm)].map((m) => ({
  runnable: Boolean(m[1]),
  script: m[2],
}));
const packageJson = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
const benchSource = readFileSync(path.join(root, 'test/bench/run.ts'), 'utf8');
/** Programs an operator brings; the runbook may call them beside ours. */
const tools = new Set(['npm', 'node', 'npx', 'docker', 'curl', 'jq', 'grep', 'tar', 'pg_dump', 'pg_restore', 'openssl']);
/** Variables read outside server/config.ts: OpenTelemetry's standard ones and Node's. */
const otherVariables = /^(OTEL_[A-Z_]+|NODE_OPTIONS)$/;

/** The commands of a block: continuation lines joined, quoted text and `$(...)` set apart, split at pipes, `&&` and `;`. */
function commandsOf(script: string): string[] {
  const inner: string[] = [];
  const line = script
    .replace(/\\\n/g, ' ')
    .replace(/'[^']*'/g, "''")
    .replace(/\$\(([^)]*)\)/g, (_all, command: string) => {
      inner.push(command);
      return 'x';
    });
  return [...line.split(/\n|\|{1,2}|&&|;/), ...inner].map((c) => c.trim()).filter(Boolean);
}

/** What is wrong with one command as the runbook states it (empty when nothing). */
function problemsOf(command: string): string[] {
  const words = command.split(/\s+/);
  const problems: string[] = [];
  while (/^[A-Z_][A-Z0-9_]*=/.test(words[0])) {
    const name = words.shift()!.split('=')[0];
    if (!configVariables.includes(name) && !otherVariables.test(name)) problems.push(`${name} is no setting`);
  }
  const [program, ...args] = words;
  if (!tools.has(program)) problems.push(`${program} is not a program the runbook may ask for`);
  // npm's own commands that install the checkout's dependencies; everything else names a script.
  if (program === 'npm' && !['ci', 'install'].includes(args[0])) {
    const script = args[0] === 'run' ? args.find((a, i) => i > 0 && !a.startsWith('-')) : args[0];
    if (!script || !packageJson.scripts[script]) problems.push(`npm script ${script} does not exist`);
    if (script === 'bench') problems.push(...benchProblems(args.slice(args.indexOf('--') + 1)));
  }
  if (program === 'npx' && args[0] === 'tsx' && !existsSync(path.join(root, args[1]))) problems.push(`${args[1]} does not exist`);
  for (const built of command.match(/\bdist\/server\/\S+\.js\b/g) ?? []) {
    const source = built.replace(/^dist\//, '').replace(/\.js$/, '.ts');
    if (!existsSync(path.join(root, source))) problems.push(`${built} is built from no ${source}`);
  }
  return problems;
}

/** The options of `npm run bench -- ...` are options of test/bench/run.ts, the scenarios its scenarios. */
function benchProblems(args: string[]): string[] {
  const scenarios = JSON.parse(
    benchSource
      .match(/const scenarios = (\[[^\]]*\])/)![1]
      .replace(/'/g, '"')
      .replace(/,\s*\]$/, ']'),
  ) as string[];
  const problems: string[] = [];
  args.forEach((arg, i) => {
    if (arg.startsWith('--') && !new RegExp(`^\\s+'?${arg.slice(2)}'?: \\{ type:`, 'm').test(benchSource))
      problems.push(`bench has no option ${arg}`);
    if (arg === '--only')
      for (const name of args[i + 1].split(',')) if (!scenarios.includes(name)) problems.push(`bench has no scenario ${name}`);
  });
  return problems;
}

/** The anchors GitHub gives a document's headings. */
function headingsOf(markdown: string): string[] {
  return [...markdown.matchAll(/^#+ (.+)$/gm)].map((m) =>
    m[1]
      .trim()
      .toLowerCase()
      .replace(/[^\w\- ]/g, '')
      .replace(/ /g, '-'),
  );
}

describe('the runbook (docs/operations.md)', () => {
  it('has runnable blocks and blocks to check', () => {
    expect(blocks.filter((b) => b.runnable).length).toBeGreaterThanOrEqual(4);
    expect(blocks.filter((b) => !b.runnable).length).toBeGreaterThanOrEqual(4);
  });

  it('names only npm scripts, files, settings and bench options that exist', () => {
    const problems = blocks.flatMap((b) => commandsOf(b.script).flatMap((c) => problemsOf(c).map((p) => `${c}: ${p}`)));
    expect(problems).toEqual([]);
  });

  it('links only to headings and documents that exist', () => {
    const missing = [...runbook.matchAll(/\]\(([^)\s]+)\)/g)]
      .map((m) => m[1])
      .filter((link) => !/^https?:/.test(link))
      .filter((link) => {
        const [file, heading] = link.split('#');
        const target = file ? path.join(root, 'docs', file) : path.join(root, 'docs/operations.md');
        return !existsSync(target) || (heading !== undefined && !headingsOf(readFileSync(target, 'utf8')).includes(heading));
      });
    expect(missing).toEqual([]);
  });

  it.each([
    ['npm run nothing-such', 'npm script nothing-such does not exist'],
    ['npm run bench -- --only livee', 'bench has no scenario livee'],
    ['npm run bench -- --speed 2', 'bench has no option --speed'],
    ['NO_SUCH_SETTING=1 npm start', 'NO_SUCH_SETTING is no setting'],
    ['node dist/server/cli/nothing.js', 'dist/server/cli/nothing.js is built from no server/cli/nothing.ts'],
    ['kubectl apply -f x.yaml', 'kubectl is not a program the runbook may ask for'],
  ])('catches a command that would not work: %s', (command, problem) => {
    expect(problemsOf(command)).toContain(problem);
  });
});

describe.each(databaseKinds)('the runnable blocks of the runbook, the service on %s', (kind) => {
  let server: TestServer;
  let work: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    const database: Record<string, string> = kind === 'postgres' ? { DATABASE_URL: await createPostgresDatabase() } : {};
    server = await startTestServer(kind, { METRICS_PORT: '0', ...database });
    work = mkdtempSync(path.join(os.tmpdir(), 'tourline-runbook-'));
    const dataDir = path.join(work, 'data');
    mkdirSync(path.join(dataDir, 'documents/ab'), { recursive: true });
    writeFileSync(path.join(dataDir, 'documents/ab/abcdef'), 'a document');
    mkdirSync(path.join(work, 'backup'));
    // The migration job runs on the test's database: PGlite in DATA_DIR, or the service's PostgreSQL.
    env = {
      ...process.env,
      ...database,
      TOURLINE_URL: server.url,
      METRICS_URL: server.running.metricsUrl,
      DATA_DIR: dataDir,
      BACKUP_DIR: path.join(work, 'backup'),
      LOG_LEVEL: 'warn',
    };
  });
  afterAll(async () => {
    await server?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it.each(blocks.filter((b) => b.runnable).map((b) => [b.script.trim(), b.script]))(
    'runs: %s',
    async (_name, script) => {
      const run = promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script], { cwd: root, env, timeout: 60_000 });
      await expect(run).resolves.toBeDefined();
    },
    90_000,
  );
});
