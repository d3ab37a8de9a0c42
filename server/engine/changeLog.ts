import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';

export const CHANGES_CHANNEL = 'tourline_changes';
// Held from the change-log insert to commit, so sequence numbers become visible in commit order.
const CHANGE_LOG_LOCK = 7_230_002;

export interface ChangeRecord {
  entity: string;
  op: 'upsert' | 'delete';
  id: string;
  tourId?: string | null;
  /** The account that may see the change; null for data every account sees. */
  accountId?: number | null;
  data?: unknown;
}

/**
 * Appends change records as the last statement of a transaction. The advisory lock serializes
 * numbering until commit: a reader never sees seq n+1 committed while n is still in flight.
 * The NOTIFY is delivered by PostgreSQL only when the transaction commits.
 */
export async function recordChanges(tx: Db, changes: ChangeRecord[]): Promise<number | undefined> {
  if (changes.length === 0) return undefined;
  // The payload names whom the commit concerns ("<max seq>:<account>,..." or "<max seq>:*" when
  // every account sees something), so an instance wakes only the sockets that have something to read.
  const owners = new Set(changes.map((c) => c.accountId ?? null));
  const audience = owners.has(null) ? '*' : [...owners].join(',');
  const rows = JSON.stringify(changes.map((c) => ({
    entity: c.entity, op: c.op, entity_id: c.id, tour_id: c.tourId ?? null, account_id: c.accountId ?? null, data: c.data ?? null,
  })));
  const result = await tx.execute<{ max_seq: string }>(sql`
    WITH lock AS (SELECT pg_advisory_xact_lock(${CHANGE_LOG_LOCK})),
    inserted AS (
      INSERT INTO change_log (entity, op, entity_id, tour_id, account_id, data)
      SELECT e.v->>'entity', e.v->>'op', e.v->>'entity_id', (e.v->>'tour_id')::uuid, (e.v->>'account_id')::bigint, NULLIF(e.v->'data', 'null'::jsonb)
      FROM lock, jsonb_array_elements(${rows}::jsonb) WITH ORDINALITY AS e(v, n)
      ORDER BY e.n
      RETURNING seq)
    SELECT max(seq)::text AS max_seq, pg_notify(${CHANGES_CHANNEL}, max(seq)::text || ':' || ${audience}::text) FROM inserted`);
  return Number(result.rows[0].max_seq);
}
