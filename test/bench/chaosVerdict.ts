import { sql } from 'drizzle-orm';
import type { TourlineClient } from '../../client-sdk/index.js';
import type { Db } from '../../server/db/client.js';
import type { Auditor } from './chaosAuditor.js';

/** What a simulated driver did, and its app. */
export interface ChaosDriver {
  index: number;
  personalnummer: number;
  tourId: string;
  items: string[];
  client: TourlineClient;
  /** Scans per item the driver made: what the database must show. */
  scans: Map<string, number>;
  eventIds: string[];
}

/** What the chaos run injected and saw on the devices. */
export interface ChaosCounts {
  viewSamples: number;
  viewOver: number;
  dropped: number;
  lost: number;
  duplicated: number;
  socketCuts: number;
  backendsTerminated: number;
  kills: number;
  appRestarts: number;
  databaseRestarts: number;
}

/**
 * The database held against what the drivers did: the report's rows, and a failure for every
 * difference (a scan not applied exactly once, a device copy off, a change missing from a feed).
 */
export async function chaosVerdict(
  db: Db,
  run: { drivers: ChaosDriver[]; auditors: Auditor[]; counts: ChaosCounts; startSeq: number; head: number },
): Promise<{ report: [string, number | string][]; failures: string[] }> {
  const { drivers, auditors, counts, startSeq, head } = run;
  const report: [string, number | string][] = [];
  const failures: string[] = [];
  // What the drivers did against what the database holds.
  const ids = drivers.flatMap((d) => d.eventIds);
  const pnrs = drivers.map((d) => d.personalnummer);
  const q = async <T>(query: ReturnType<typeof sql>) => (await db.execute<T & Record<string, unknown>>(query)).rows;
  const [processed] = await q<{ n: string; known: string }>(sql`
    SELECT count(*)::text AS n, count(*) FILTER (WHERE event_id = ANY(${`{${ids.join(',')}}`}::uuid[]))::text AS known
    FROM processed_events WHERE account_id = ANY(${`{${pnrs.join(',')}}`}::bigint[])`);
  const [audit] = await q<{ n: string; distinct_ids: string }>(sql`
    SELECT count(*)::text AS n, count(DISTINCT client_scan_id)::text AS distinct_ids FROM scan_audit WHERE account_id = ANY(${`{${pnrs.join(',')}}`}::bigint[])`);
  const items = await q<{ id: string; scanned: number }>(sql`
    SELECT i.id::text AS id, i.scanned_quantity AS scanned FROM delivery_items i JOIN deliveries d ON d.id = i.delivery_id JOIN tours t ON t.id = d.tour_id
    WHERE t.account_id = ANY(${`{${pnrs.join(',')}}`}::bigint[])`);
  const scannedInDb = new Map(items.map((r) => [r.id, Number(r.scanned)]));
  let itemsOff = 0;
  let copiesOff = 0;
  let missingFromFeeds = 0;
  let rejected = 0;
  for (const driver of drivers) {
    for (const [item, n] of driver.scans) if (scannedInDb.get(item) !== n) itemsOff += 1;
    rejected += driver.client.rejected().length;
    const copy = driver.client.serverTour(driver.tourId);
    for (const position of copy?.deliveries.flatMap((d) => d.positions) ?? [])
      if (position.scannedQuantity !== scannedInDb.get(position.id)) copiesOff += 1;
    if (!copy) copiesOff += driver.items.length;
  }
  for (const auditor of auditors) {
    const visible = await q<{ seq: string }>(sql`
      SELECT seq::text AS seq FROM change_log WHERE seq > ${startSeq} AND (account_id = ${auditor.driver.personalnummer} OR account_id IS NULL)`);
    missingFromFeeds += visible.filter((r) => !auditor.seqs.has(Number(r.seq))).length;
  }
  const [runs] = await q<{ ok: string; dates: string }>(sql`
    SELECT count(*)::text AS ok, count(DISTINCT target_date)::text AS dates FROM erp_import_runs WHERE success`);

  const events = ids.length;
  report.push(
    ['scans made by the drivers', events],
    ['processed events in the database', Number(processed.n)],
    ['  of them scans the drivers made', Number(processed.known)],
    ['scan audit rows', Number(audit.n)],
    ['  distinct scan ids', Number(audit.distinct_ids)],
    ['items whose count differs from the scans made', itemsOff],
    ['rejected events', rejected],
    ['positions where a device copy differs from the database', copiesOff],
    ['device views sampled (every change event)', counts.viewSamples],
    ['  of them counting a scan twice', counts.viewOver],
    ["changes missing from an account's live feed", missingFromFeeds],
    ['changes recorded during the run', head - startSeq],
    ['successful ERP import runs (dates)', `${runs.ok} (${runs.dates})`],
    ['pushes sent twice at once', counts.duplicated],
    ['requests dropped', counts.dropped],
    ['answers lost', counts.lost],
    ['SIGKILLs', counts.kills],
    ['PostgreSQL restarts', counts.databaseRestarts],
    ['WebSocket cuts', counts.socketCuts],
    ['database connections cut', counts.backendsTerminated],
    ['app restarts', counts.appRestarts],
  );
  const expectEqual = (what: string, actual: number, expected: number) => {
    if (actual !== expected) failures.push(`${what}: ${actual}, expected ${expected}`);
  };
  expectEqual('processed events', Number(processed.n), events);
  expectEqual('processed events the drivers made', Number(processed.known), events);
  expectEqual('scan audit rows', Number(audit.n), events);
  expectEqual('distinct scan ids in the audit', Number(audit.distinct_ids), events);
  expectEqual('items off', itemsOff, 0);
  expectEqual('rejected events', rejected, 0);
  expectEqual('device copies off', copiesOff, 0);
  expectEqual('device views counting a scan twice', counts.viewOver, 0);
  expectEqual('changes missing from live feeds', missingFromFeeds, 0);
  if (Number(runs.ok) !== Number(runs.dates))
    failures.push(`ERP import: ${runs.ok} successful runs for ${runs.dates} dates; a date must be imported once`);
  return { report, failures };
}
