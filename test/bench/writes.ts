import { sql } from 'drizzle-orm';
import type { PGlite } from '@electric-sql/pglite';
import type { RunningServer } from '../../server/server.js';
import { reportErrors, runLoad, withServer, type BenchContext, type Metrics, type Results } from './context.js';
import { runFloorWith, type BatchShape, type Measured, type WindowMark } from './jobs.js';
import { seedDrivers } from './seed.js';
import { latencies, round } from './stats.js';

/**
 * push, floor and push_small on one seeded database. The floor writes the same rows as push
 * with plain SQL (through `pg` from the load process; on PGlite through its own client, the
 * only way in); floor_ratio = push ÷ floor.
 */
export async function writeScenarios(ctx: BenchContext, which: { push: boolean; floor: boolean; pushSmall: boolean }): Promise<Results> {
  const { push, pushSmall, floor } = ctx.sizes;
  const target = await ctx.newTarget('writes');
  return withServer(target, async (server) => {
    const results: Results = {};
    ctx.log(`  seeding ${push.drivers + pushSmall.drivers} drivers`);
    const drivers = await seedDrivers(server, {
      first: 50_001,
      count: push.drivers,
      deliveries: push.deliveries,
      positions: push.positions,
    });
    const small = which.pushSmall
      ? await seedDrivers(server, {
          first: 60_001,
          count: pushSmall.drivers,
          deliveries: pushSmall.deliveries,
          positions: pushSmall.positions,
        })
      : [];

    // Each scenario starts from a checkpoint: the gigabytes of WAL that floor and push write would
    // otherwise have PostgreSQL checkpoint in the middle of the next one, whose tail then measures
    // that (push_small p99 117–178 against 44 ms).
    const checkpoint = () => server.ctx.database.db.execute(sql`CHECKPOINT`);
    if (which.floor) {
      await checkpoint();
      ctx.log('  floor');
      const job = { drivers, deliveriesPerBatch: push.deliveriesPerBatch, eventsPerDelivery: push.eventsPerDelivery, ...floor };
      const measured =
        ctx.kind === 'postgres'
          ? await runLoad({ kind: 'floor', databaseUrl: target.databaseUrl!, ...job })
          : await runFloorWith(job, (work) =>
              pgliteClient(server).transaction(async (tx) => {
                await work((text, params) => tx.query(text, params));
              }),
            );
      reportErrors(ctx, 'floor', measured);
      results.floor = { events_per_s: Math.round(measured.count / (measured.elapsedMs / 1000)) };
    }
    if (which.push) {
      await checkpoint();
      ctx.log('  push');
      const cpu = serviceCpu();
      const measured = await runLoad(
        { kind: 'push', url: server.url, drivers, thinkMs: 0, deviceReports: ctx.deviceReports, ...pick(push) },
        cpu.mark,
      );
      reportErrors(ctx, 'push', measured);
      results.push = {
        events_per_s: Math.round(measured.count / (measured.elapsedMs / 1000)),
        ...latencies(measured.latencies),
        ...cpu.perRequest(measured),
      };
    }
    if (which.pushSmall) {
      await checkpoint();
      ctx.log('  push_small');
      const cpu = serviceCpu();
      const measured = await runLoad(
        { kind: 'push', url: server.url, drivers: small, ...pick(pushSmall), thinkMs: pushSmall.thinkMs },
        cpu.mark,
      );
      reportErrors(ctx, 'push_small', measured);
      results.push_small = {
        ...latencies(measured.latencies),
        requests_per_s: round(measured.requests / (measured.elapsedMs / 1000)),
        ...cpu.perRequest(measured),
      };
    }
    return results;
  });
}

/**
 * The service's CPU time per request over the load's measured window: this process's user and
 * system time, all threads (on PGlite the database too, which runs in it). It varies far less
 * between runs than the tail latencies do, so it shows what a change to the hot path saves.
 * Beside it the load process's, which shares the two vCPUs with the service and the database.
 */
function serviceCpu() {
  let from: NodeJS.CpuUsage | undefined;
  let used: NodeJS.CpuUsage | undefined;
  return {
    mark: (mark: WindowMark) => {
      if (mark === 'measuring') from = process.cpuUsage();
      else if (from) used = process.cpuUsage(from);
    },
    perRequest: (measured: Measured): Metrics =>
      used && measured.requests > 0
        ? {
            service_cpu_ms: round((used.user + used.system) / 1000 / measured.requests, 2),
            ...(measured.cpuMs !== undefined && { load_cpu_ms: round(measured.cpuMs / measured.requests, 2) }),
          }
        : {},
  };
}

const pick = (s: BatchShape & { durationMs: number; warmupMs: number }) => ({
  deliveriesPerBatch: s.deliveriesPerBatch,
  eventsPerDelivery: s.eventsPerDelivery,
  durationMs: s.durationMs,
  warmupMs: s.warmupMs,
});

const pgliteClient = (server: RunningServer) => (server.ctx.database.db as unknown as { $client: PGlite }).$client;
