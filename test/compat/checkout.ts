import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const repository = path.resolve(import.meta.dirname, '../..');

/** Each release's own `npm ci`, kept by commit: installing takes a minute or more, a link none. */
const packageCache = path.join(tmpdir(), 'tourline-release-packages');

/** The packages a lock names (version and integrity), without our own workspaces. */
function lockedPackages(dir: string): Map<string, string> {
  const { packages } = JSON.parse(readFileSync(path.join(dir, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string; integrity?: string; link?: boolean }>;
  };
  const locked = new Map<string, string>();
  for (const [name, p] of Object.entries(packages))
    if (name.startsWith('node_modules/') && !p.link && !name.startsWith('node_modules/@tourline/'))
      locked.set(name, `${p.version} ${p.integrity}`);
  return locked;
}

/**
 * The packages of a release's checkout `dir`: this checkout's node_modules, linked, when it holds
 * every package the release's lock names at the same version (added ones do no harm), else the
 * release's own `npm ci --prefer-offline`, run once per commit and linked from the cache after.
 */
function linkPackages(dir: string, commit: string) {
  const ours = lockedPackages(repository);
  const same = [...lockedPackages(dir)].every(([name, version]) => ours.get(name) === version);
  const cached = path.join(packageCache, commit, 'node_modules');
  if (!same && !existsSync(cached)) {
    execFileSync('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
    mkdirSync(path.dirname(cached), { recursive: true });
    renameSync(path.join(dir, 'node_modules'), cached);
  }
  symlinkSync(same ? path.join(repository, 'node_modules') : cached, path.join(dir, 'node_modules'), 'dir');
}

/**
 * A release's commit in a temporary worktree with its packages, built as production builds it
 * (`node build.mjs`: dist/ beside its package.json, as in the image); `buildSdk` builds its SDK
 * too. `remove` takes the worktree away again.
 */
export function checkoutRelease(commit: string, options: { buildSdk?: boolean } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'tourline-release-'));
  rmSync(dir, { recursive: true });
  execFileSync('git', ['-C', repository, 'worktree', 'add', '--detach', dir, commit], { stdio: 'ignore' });
  const remove = () => execFileSync('git', ['-C', repository, 'worktree', 'remove', '--force', dir], { stdio: 'ignore' });
  try {
    linkPackages(dir, commit);
    execFileSync(process.execPath, ['build.mjs'], { cwd: dir, stdio: 'inherit' });
    if (options.buildSdk) execFileSync(process.execPath, ['client-sdk/build.mjs'], { cwd: dir, stdio: 'inherit' });
  } catch (error) {
    remove();
    throw error;
  }
  return { dir, remove };
}

/** This checkout built as the image holds it: dist/, package.json and node_modules (linked) in a temporary directory. */
export function buildCheckout() {
  const dir = mkdtempSync(path.join(tmpdir(), 'tourline-build-'));
  execFileSync(process.execPath, [path.join(repository, 'build.mjs'), '--outdir', path.join(dir, 'dist')], { cwd: repository });
  copyFileSync(path.join(repository, 'package.json'), path.join(dir, 'package.json'));
  symlinkSync(path.join(repository, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** An npm script of a build's package.json (`start:prod`, `migrate:prod`: `node <options> dist/…`) as command and arguments. */
export function buildScript(dir: string, script: string): [string, string[]] {
  const { scripts } = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const [node, ...args] = scripts[script].split(/\s+/);
  if (node !== 'node') throw new Error(`${dir}: npm run ${script} is not a node command: ${scripts[script]}`);
  return [process.execPath, args];
}

/** The built service of `dir` (its `npm run start:prod`) in a process of its own, once it listens. */
export async function startService(dir: string, env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const [command, args] = buildScript(dir, 'start:prod');
  const child = spawn(command, args, {
    cwd: dir,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', ERP_IMPORT_ENABLED: 'false', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    // Read to the end: a pipe nobody reads stops the service once it is full.
    child.stdout!.on('data', (chunk) => {
      if (out.length < 100_000) out += chunk;
      const found = /listening on (http:\/\/[\d.:]+)/.exec(out);
      if (found) resolve(found[1]);
    });
    child.once('exit', (code) => reject(new Error(`the service in ${dir} stopped (${code}): ${out.slice(-2000)}`)));
  });
  return { url, child };
}
