import { problem, reportErrors, runLoad, withServer, type BenchContext, type Metrics } from './context.js';
import { seedDrivers } from './seed.js';
import { latencies } from './stats.js';

/** 1000 live clients (100 accounts × 10 devices) while 20 small commits a second are pushed. */
export async function fanout(ctx: BenchContext): Promise<Metrics> {
  const size = ctx.sizes.fanout;
  const target = await ctx.newTarget('fanout');
  return withServer(target, async (server) => {
    const drivers = await seedDrivers(server, { first: 90_001, count: size.accounts, deliveries: 1, positions: 1 });
    const measured = await runLoad({
      kind: 'fanout',
      url: server.url,
      clientsPerAccount: size.clientsPerAccount,
      commitsPerSecond: size.commitsPerSecond,
      durationMs: size.durationMs,
      accounts: drivers.map((d) => ({ token: d.token, deliveryId: d.deliveries[0].id, itemId: d.deliveries[0].items[0] })),
    });
    reportErrors(ctx, 'fanout', measured);
    const { expected = 0, missing = 0, connect_ms = 0 } = measured.extra ?? {};
    ctx.log(`  fanout: ${measured.count}/${expected} receipts, ${measured.requests} commits, connected in ${Math.round(connect_ms)} ms`);
    if (missing > 0 || measured.count === 0) problem(ctx, `fanout: ${missing} of ${expected} receipts missing`);
    return latencies(measured.latencies);
  });
}
