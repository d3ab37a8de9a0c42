import type { Results } from './context.js';
import { targets } from './targets.js';

/** The figures of every database side by side, each beside its target on PostgreSQL. */
export function printTable(data: Record<string, Results>, scenarios: readonly string[], log: (line: string) => void) {
  const dbs = Object.keys(data);
  const rows: string[][] = [['scenario', 'metric', ...dbs, 'target (postgres)']];
  for (const scenario of scenarios) {
    const metrics = new Set(dbs.flatMap((db) => Object.keys(data[db][scenario] ?? {})));
    for (const metric of metrics) {
      const target = targets.find(([s, m]) => s === scenario && m === metric);
      const value = data.postgres?.[scenario]?.[metric];
      const verdict =
        target && value !== undefined
          ? `${target[3] === 'min' ? '>=' : '<='} ${target[2]} ${(target[3] === 'min' ? value >= target[2] : value <= target[2]) ? 'ok' : 'MISSED'}`
          : '';
      rows.push([scenario, metric, ...dbs.map((db) => String(data[db][scenario]?.[metric] ?? '')), verdict]);
    }
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  log('');
  for (const [i, row] of rows.entries()) {
    log(row.map((cell, c) => (c >= 2 && c < row.length - 1 ? cell.padStart(widths[c]) : cell.padEnd(widths[c]))).join('  '));
    if (i === 0) log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
}
