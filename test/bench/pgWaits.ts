/**
 * What PostgreSQL's backends of one database were doing while a scenario ran: pg_stat_activity
 * sampled every 100 ms from a connection of its own, summed per state and wait event. A lock
 * that writers queue on shows as `Lock:advisory` or `Lock:transactionid`.
 */
import pg from 'pg';
import { round, sleep } from './stats.js';

export interface WaitSampler {
  /** Stops sampling; the average number of backends per state and wait event, busiest first. */
  stop(): Promise<[string, number][]>;
}

/** A prepared statement, every 100 ms: planned each time every 20 ms, it took 3–4 % of a core of the host it measures. */
export async function sampleWaits(databaseUrl: string, everyMs = 100): Promise<WaitSampler> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
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
      await client.end();
      return [...counts]
        .map(([what, n]): [string, number] => [what, round(n / Math.max(1, samples), 2)])
        .filter(([what]) => what !== 'idle' && !what.startsWith('idle Client'))
        .sort((a, b) => b[1] - a[1]);
    },
  };
}
