import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const repository = path.resolve(import.meta.dirname, '../..');

/**
 * A release's commit in a temporary worktree with its packages: hard links of this checkout's
 * when its lock is the same, else `npm ci` from the local cache. `remove` takes it away again.
 */
export function checkoutRelease(commit: string, options: { buildSdk?: boolean } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'tourline-release-'));
  rmSync(dir, { recursive: true });
  execFileSync('git', ['-C', repository, 'worktree', 'add', '--detach', dir, commit], { stdio: 'ignore' });
  // The packages the lock names, without the versions of our own two.
  const lock = (at: string) => {
    const { packages } = JSON.parse(readFileSync(path.join(at, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    const { '': _root, 'client-sdk': _sdk, ...rest } = packages;
    return JSON.stringify(rest);
  };
  if (lock(dir) === lock(repository)) execFileSync('cp', ['-al', path.join(repository, 'node_modules'), path.join(dir, 'node_modules')]);
  else execFileSync('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
  if (options.buildSdk) execFileSync(process.execPath, ['client-sdk/build.mjs'], { cwd: dir, stdio: 'inherit' });
  return {
    dir,
    remove: () => execFileSync('git', ['-C', repository, 'worktree', 'remove', '--force', dir], { stdio: 'ignore' }),
  };
}

/** The service of a checkout (`tsx server/main.ts` in `dir`) in a process of its own, once it listens. */
export async function startService(dir: string, env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(path.join(dir, 'node_modules/.bin/tsx'), ['server/main.ts'], {
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
