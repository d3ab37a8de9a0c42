import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function alive(pid: number) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The processes whose parent is `pid` (a postmaster's backends and helpers). */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The command name in field 2 may hold spaces; the parent's pid is the second field after it.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === pid) found.push(Number(entry));
    } catch {
      /* gone meanwhile */
    }
  }
  return found;
}

/**
 * Faults of a PostgreSQL server this test owns, found through its admin URL: freeze and thaw all
 * of its processes (SIGSTOP, SIGCONT), stop it (fast shutdown) and start it again with the same
 * command line, as the same user. Linux only (reads /proc).
 */
export async function controlPostgres(adminUrl: string) {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const dataDir = (await admin.query<{ data_directory: string }>('SHOW data_directory')).rows[0].data_directory;
  await admin.end();
  let pid = Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
  const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  const executable = readlinkSync(`/proc/${pid}/exe`);
  const cwd = readlinkSync(`/proc/${pid}/cwd`);
  const { uid, gid } = statSync(`/proc/${pid}`);

  const signalAll = (signal: NodeJS.Signals) => {
    for (const target of [pid, ...childrenOf(pid)]) {
      try {
        process.kill(target, signal);
      } catch {
        /* gone meanwhile */
      }
    }
  };

  async function ready() {
    for (let i = 0; i < 600; i++) {
      const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 1000 });
      try {
        await client.connect();
        await client.query('SELECT 1');
        return;
      } catch {
        await sleep(50);
      } finally {
        await client.end().catch(() => undefined);
      }
    }
    throw new Error('PostgreSQL did not come back within 30 s');
  }

  return {
    get pid() {
      return pid;
    },
    freeze: () => signalAll('SIGSTOP'),
    thaw: () => signalAll('SIGCONT'),
    /** A fast shutdown: sessions are ended with "terminating connection due to administrator command". */
    async stop() {
      if (!alive(pid)) return;
      process.kill(pid, 'SIGINT');
      while (alive(pid)) await sleep(20);
    },
    /** Starts the server unless it runs: a second postmaster would fail on the lock file and leave `pid` pointing at it. */
    async start() {
      if (alive(pid)) return;
      const child = spawn(executable, command.slice(1), {
        cwd,
        uid,
        gid,
        stdio: 'ignore',
        detached: false,
        env: { ...process.env, LC_ALL: 'C' },
      });
      child.unref();
      pid = child.pid!;
      await ready();
    },
    /**
     * Stops the server and removes its files, in place of the starter's stop (which waits for the
     * exit of the process it started, long gone after a restart).
     */
    async dispose() {
      this.thaw();
      await this.stop();
      rmSync(dataDir, { recursive: true, force: true });
      if (path.basename(dataDir) === 'data') rmSync(path.dirname(dataDir), { recursive: true, force: true });
    },
  };
}

export type PostgresControl = Awaited<ReturnType<typeof controlPostgres>>;
