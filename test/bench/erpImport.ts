import { sql } from 'drizzle-orm';
import { problem, withServer, type BenchContext, type Metrics } from './context.js';
import { benchErp } from './erpData.js';
import { requestJson } from './http.js';
import { monotonicMs, round } from './stats.js';
import { BENCH_ADMIN_KEY } from './target.js';

/** The ERP import of a large day, then the same day again: the second run must change nothing. */
export async function importScenario(ctx: BenchContext): Promise<Metrics> {
  const target = await ctx.newTarget('import');
  return withServer(
    target,
    async (server) => {
      const { db } = server.ctx.database;
      const changes = async () => Number((await db.execute<{ n: string }>(sql`SELECT count(*)::text AS n FROM change_log`)).rows[0].n);
      const run = async () => {
        const t0 = monotonicMs();
        const summary = await requestJson('POST', `${server.url}/admin/import-erp?date=2026-09-01`, { admin: BENCH_ADMIN_KEY });
        const seconds = (monotonicMs() - t0) / 1000;
        if (!summary.success) throw new Error(`import failed: ${JSON.stringify(summary).slice(0, 300)}`);
        return { seconds, summary };
      };
      const first = await run();
      const afterFirst = await changes();
      const again = await run();
      const againChanges = (await changes()) - afterFirst;
      if (againChanges !== 0) problem(ctx, `import: the second run wrote ${againChanges} change records`);
      ctx.log(
        `  import: ${first.summary.deliveries_created} deliveries, ${first.summary.positions_created} positions, ${afterFirst} change records`,
      );
      return { first_s: round(first.seconds, 2), again_s: round(again.seconds, 2), again_changes: againChanges };
    },
    { erp: benchErp(ctx.sizes.import) },
  );
}
