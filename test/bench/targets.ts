import type { Results } from './context.js';

/** A bound a figure must keep on PostgreSQL: [scenario, metric, bound, 'min' | 'max']. */
export type FigureTarget = [string, string, number, 'min' | 'max'];

export const targets: FigureTarget[] = [
  ['push', 'events_per_s', 10_000, 'min'],
  ['push', 'floor_ratio', 0.5, 'min'],
  ['push_small', 'p99_ms', 50, 'max'],
  ['tour_read', 'p50_ms', 10, 'max'],
  ['fanout', 'p99_ms', 100, 'max'],
  ['import', 'first_s', 60, 'max'],
  ['import', 'again_s', 15, 'max'],
  ['import', 'again_changes', 0, 'max'],
  ['startup', 'existing_ms', 2000, 'max'],
  ...(['completed_day', 'delivered_day', 'belege', 'positions_modified'] as const).map((read): FigureTarget => [
    'history',
    `${read}_year_p50_ms`,
    20,
    'max',
  ]),
  ['history', 'reviews_year_p50_ms', 50, 'max'],
  ['history', 'writeback_poll_year_p50_ms', 5, 'max'],
  ['history', 'completed_all_rss_growth_mb', 50, 'max'],
  // Within 15 % of the database that holds only today.
  ['history', 'push_year_ratio', 0.9, 'min'],
  ['history', 'import_year_ratio', 1.15, 'max'],
  ['history', 'me_tours_year_ratio', 1.15, 'max'],
  ['history', 'tour_read_year_ratio', 1.15, 'max'],
  ...[10_000, 15_000].flatMap((n): FigureTarget[] => [
    ['live', `push_p99_ms_${n}`, 50, 'max'],
    ['live', `push_p99_ms_service_${n}`, 50, 'max'],
    ['live', `fanout_p99_ms_${n}`, 100, 'max'],
  ]),
  ...[1000, 5000, 10_000, 15_000].map((n): FigureTarget => ['live', `errors_${n}`, 0, 'max']),
  // The sockets held cost at most 10 points of CPU over the same pushes with none open.
  ['live', 'cpu_pct_added_10000', 10, 'max'],
  ...['', '_month', '_year'].flatMap((size): FigureTarget[] => [
    ['upgrade', `failed_requests${size}`, 0, 'max'],
    ['upgrade', `events_lost${size}`, 0, 'max'],
    ['upgrade', `events_doubled${size}`, 0, 'max'],
    ['upgrade', `old_write_stall_max_ms${size}`, 1000, 'max'],
  ]),
];

/** The targets the figures on PostgreSQL miss. */
export function missedTargets(postgres: Results | undefined): FigureTarget[] {
  return targets.filter(([s, m, bound, way]) => {
    const value = postgres?.[s]?.[m];
    return value !== undefined && (way === 'min' ? value < bound : value > bound);
  });
}
