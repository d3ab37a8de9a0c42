/**
 * What PostgreSQL's backends of one database were doing while a scenario ran: pg_stat_activity
 * sampled every 100 ms from a connection of its own, summed per state and wait event. A lock
 * that writers queue on shows as `Lock:advisory` or `Lock:transactionid`. Also the transactions
 * the database ended and the CPU time of PostgreSQL's processes when they run on this host.
 */
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { round, sleep } from './stats.js';

export interface PostgresActivity {
  /** The average number of backends per state and wait event, busiest first. */
  waits: [string, number][];
  /** Transactions committed or rolled back in the database (pg_stat_database, flushed about once a second), but the sampler's own. */
  transactions: number;
  /** User and system time of PostgreSQL's processes on this host; undefined when it runs elsewhere. */
  cpuMs: number | undefined;
}

export interface WaitSampler {
  /** Stops sampling: what PostgreSQL did since it started. */
  stop(): Promise<PostgresActivity>;
}

const TRANSACTIONS = `SELECT (xact_commit + xact_rollback)::float8 AS n FROM pg_stat_database WHERE datname = current_database()`;
// The kernel's clock ticks per second for /proc's times (USER_HZ), 100 on Linux.
const TICKS_PER_SECOND = 100;

/**
 * PostgreSQL's processes are the postmaster and its children: the postmaster's own time, that of
 * its children that ended (a backend whose connection closed), and that of those still running.
 */
function postgresCpuMs(): number | undefined {
  const processes = new Map<string, { parent: string; ticks: number; ended: number }>();
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      if (!stat.includes(' (postgres) ')) continue;
      // The fields after the command's closing parenthesis: the parent is the 2nd; utime, stime,
      // cutime and cstime the 12th to 15th.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      processes.set(pid, {
        parent: fields[1],
        ticks: Number(fields[11]) + Number(fields[12]),
        ended: Number(fields[13]) + Number(fields[14]),
      });
    } catch {
      // A process that ended meanwhile.
    }
  }
  if (processes.size === 0) return undefined;
  let ticks = 0;
  for (const { parent, ticks: own, ended } of processes.values()) ticks += own + (processes.has(parent) ? 0 : ended);
  return (ticks * 1000) / TICKS_PER_SECOND;
}

/** A prepared statement, every 100 ms: planned each time every 20 ms, it took 3–4 % of a core of the host it measures. */
export async function sampleWaits(databaseUrl: string, everyMs = 100): Promise<WaitSampler> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const transactions = async () => (await client.query<{ n: number }>(TRANSACTIONS)).rows[0].n;
  const cpuFrom = postgresCpuMs();
  const transactionsFrom = await transactions();
  const counts = new Map<string, number>();
  let samples = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const { rows } = await client.query<{ what: string; n: number }>({
        name: 'bench_waits',
        text: `SELECT state || coalesce(' ' || wait_event_type || ':' || wait_event, '') AS what, count(*)::int AS n
         FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state IS NOT NULL
         GROUP BY 1`,
      });
      samples += 1;
      for (const { what, n } of rows) counts.set(what, (counts.get(what) ?? 0) + n);
      await sleep(everyMs);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      const cpuTo = postgresCpuMs();
      const transactionsTo = await transactions();
      await client.end();
      const waits = [...counts]
        .map(([what, n]): [string, number] => [what, round(n / Math.max(1, samples), 2)])
        .filter(([what]) => what !== 'idle' && !what.startsWith('idle Client'))
        .sort((a, b) => b[1] - a[1]);
      const cpuMs = cpuFrom === undefined || cpuTo === undefined ? undefined : cpuTo - cpuFrom;
      return { waits, transactions: transactionsTo - transactionsFrom - samples, cpuMs };
    },
  };
}
