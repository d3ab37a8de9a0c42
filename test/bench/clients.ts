/**
 * `npm run bench -- --only clients`: one driver day through three offline write queues, each on
 * durable storage of its own kind, each sending to the same running Tourline: Tourline's SDK
 * (`SqliteStore`), TanStack DB's `@tanstack/offline-transactions` and PowerSync's upload queue
 * (`@powersync/node`). Per client: the day queued offline (durable enqueue p50/p99, heap per
 * 1,000 queued), the network back (time to drain, requests and bytes sent), a second day queued
 * and the client restarted (restart to its first send), and each day checked on the service.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { RunningServer } from '../../server/server.js';
import { retainedBytes } from '../helpers/memory.js';
import { checkExactlyOnce, dayFiles, seedDay, type ClientsSizes, type Day, type DayFiles } from './clientsDay.js';
import { openLink, type Link } from './clientsLink.js';
import { openPowerSync } from './clientsPowerSync.js';
import type { BenchClient } from './clientsSend.js';
import { openTanStack } from './clientsTanStack.js';
import { openTourline } from './clientsTourline.js';
import { percentile, round, sleep } from './stats.js';
import { startBenchServer, type Target } from './target.js';

export { fullClientsSizes, tinyClientsSizes, type ClientsSizes } from './clientsDay.js';

type Open = (dir: string, day: Day, files: DayFiles, link: Link, options: { online: boolean; loadTour: boolean }) => Promise<BenchClient>;

export const clientNames = ['tourline', 'tanstack', 'powersync'] as const;
const opens: Record<(typeof clientNames)[number], Open> = { tourline: openTourline, tanstack: openTanStack, powersync: openPowerSync };

interface ClientsContext {
  newTarget(name: string): Promise<Target>;
  log(message: string): void;
  problems: string[];
}

/** The day queued with the network gone, then the network back: what queueing costs and how fast it empties. */
async function queueAndDrain(server: RunningServer, open: Open, day: Day, files: DayFiles, dir: string) {
  const link = await openLink(server.url);
  try {
    const client = await open(dir, day, files, link, { online: false, loadTour: true });
    link.up = false;
    const heapBefore = retainedBytes();
    const enqueueMs: number[] = [];
    for (const action of day.actions) {
      const started = performance.now();
      await client.enqueue(action);
      enqueueMs.push(performance.now() - started);
    }
    const heapGrowth = retainedBytes() - heapBefore;
    const before = { ...link.counters };
    link.up = true;
    const started = performance.now();
    client.online();
    await client.drained();
    const drainMs = performance.now() - started;
    await client.close();
    return {
      enqueue_p50_ms: round(percentile(enqueueMs, 50), 2),
      enqueue_p99_ms: round(percentile(enqueueMs, 99), 2),
      heap_kb_per_1000: round(((heapGrowth / day.actions.length) * 1000) / 1024, 0),
      drain_ms: round(drainMs, 0),
      requests: link.counters.requests - before.requests,
      kb_sent: round((link.counters.bytesSent - before.bytesSent) / 1024, 0),
    };
  } finally {
    await link.close();
  }
}

/** A day queued offline and the client closed; the time from opening it again, online, to its first request that sends an action. */
async function restart(server: RunningServer, open: Open, day: Day, files: DayFiles, dir: string) {
  const link = await openLink(server.url);
  try {
    const queueing = await open(dir, day, files, link, { online: false, loadTour: true });
    link.up = false;
    for (const action of day.actions) await queueing.enqueue(action);
    await queueing.close();
    link.up = true;
    link.resetFirstSend();
    const started = performance.now();
    const client = await open(dir, day, files, link, { online: true, loadTour: false });
    while (link.firstSendAt === undefined) await sleep(1);
    const firstSendMs = link.firstSendAt - started;
    await client.drained();
    await client.close();
    return { restart_to_first_send_ms: round(firstSendMs, 0) };
  } finally {
    await link.close();
  }
}

export async function clients(ctx: ClientsContext, sizes: ClientsSizes): Promise<Record<string, number>> {
  const target = await ctx.newTarget('clients');
  const server = await startBenchServer(target);
  const dirs: string[] = [];
  const results: Record<string, number> = {};
  try {
    const files = await dayFiles();
    let personalnummer = 91_000;
    for (const name of clientNames) {
      ctx.log(`  ${name}`);
      const newDir = async () => {
        const dir = await mkdtemp(path.join(os.tmpdir(), `tourline-bench-clients-${name}-`));
        dirs.push(dir);
        return dir;
      };
      const days = [await seedDay(server, personalnummer++, sizes), await seedDay(server, personalnummer++, sizes)];
      const figures = {
        ...(await queueAndDrain(server, opens[name], days[0], files, await newDir())),
        ...(await restart(server, opens[name], days[1], files, await newDir())),
      };
      const problems = [...(await checkExactlyOnce(server, days[0])), ...(await checkExactlyOnce(server, days[1]))];
      for (const problem of problems) ctx.problems.push(`${name}: ${problem}`);
      for (const [metric, value] of Object.entries({ ...figures, exactly_once: problems.length === 0 ? 1 : 0 }))
        results[`${name}_${metric}`] = value;
    }
  } finally {
    await server.close();
    target.dispose();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  }
  ctx.log(sideBySide(results));
  return results;
}

/** The figures with one column per client. */
export function sideBySide(results: Record<string, number>): string {
  const metrics = [...new Set(Object.keys(results).map((key) => key.slice(key.indexOf('_') + 1)))];
  const rows = [['figure', ...clientNames], ...metrics.map((m) => [m, ...clientNames.map((c) => String(results[`${c}_${m}`] ?? ''))])];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((row) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ')).join('\n');
}
