import type pg from 'pg';
import { expect } from 'vitest';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How many statements of the client's database wait for a lock. */
export const lockWaiters = async (client: pg.Client) =>
  Number(
    (
      await client.query(`SELECT count(*) AS n FROM pg_stat_activity
  WHERE datname = current_database() AND wait_event_type = 'Lock'`)
    ).rows[0].n,
  );

/** Waits until `count` statements of the database wait for a lock. */
export async function waitersReach(client: pg.Client, count: number) {
  for (let i = 0; i < 100 && (await lockWaiters(client)) < count; i++) await sleep(20);
  expect(await lockWaiters(client)).toBe(count);
}
