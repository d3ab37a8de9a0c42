/**
 * The lock waits of one database while something runs: pg_stat_activity sampled every 50 ms from
 * a connection of its own. Tells whether a slow write waited for a lock, and for whose statement.
 */
import pg from 'pg';

export interface LockWait {
  ms: number;
  waiting: string;
  /** The statements of the sessions it waited for. */
  blockedBy: string;
}

const SAMPLE = `SELECT (extract(epoch FROM now() - a.state_change) * 1000)::int AS ms, left(a.query, 120) AS waiting,
  (SELECT string_agg(left(b.query, 120), ' | ') FROM pg_stat_activity b WHERE b.pid = ANY(pg_blocking_pids(a.pid))) AS "blockedBy"
  FROM pg_stat_activity a WHERE a.datname = current_database() AND a.wait_event_type = 'Lock'`;

/** Samples until `stop()`, which answers the longest wait seen (ms 0 when none). */
export async function sampleLockWaits(databaseUrl: string): Promise<{ stop(): Promise<LockWait> }> {
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'bench lock sampler' });
  await client.connect();
  let longest: LockWait = { ms: 0, waiting: '', blockedBy: '' };
  let running = true;
  const loop = (async () => {
    while (running) {
      const { rows } = await client.query<LockWait>(SAMPLE);
      for (const row of rows) if (row.ms > longest.ms) longest = { ...row, blockedBy: row.blockedBy ?? '' };
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      await client.end();
      return longest;
    },
  };
}
