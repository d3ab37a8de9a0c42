import { sql } from 'drizzle-orm';
import type { ChangeData, ChangeEntity } from '../../shared/schemas/sync.js';
import { executePrepared, oneWriteTransaction, type Db } from '../db/client.js';

export const CHANGES_CHANNEL = 'tourline_changes';
// Writers hold it SHARED from numbering to commit, so they never wait for each other; a reader
// that takes it exclusively waits until every writer holding a number has committed or aborted.
export const CHANGE_LOG_LOCK = 7_230_002;

/** One change to record; `data` is the entity's public shape (shared/schemas/sync.ts). */
export type ChangeRecord = {
  [E in ChangeEntity]: {
    entity: E;
    op: 'upsert' | 'delete';
    id: string;
    tourId?: string | null;
    /** The account that may see the change; null for data every account sees. */
    accountId?: number | null;
    data?: ChangeData[E];
    /**
     * On the last record a write makes for an account: the ids of that account's events it
     * applied. A client that has applied the changes up to this one holds their effects.
     */
    eventIds?: string[];
  };
}[ChangeEntity];

// A NOTIFY payload must stay below 8000 bytes (PostgreSQL refuses the commit otherwise): the seqs
// in front get this much (five runs of seven-digit seqs), the list of accounts the rest. About
// 1,000 accounts fit.
export const MAX_RUNS_CHARS = 80;
export const MAX_AUDIENCE_CHARS = 7900;

/**
 * The change-log append as parts of a WITH, so that it can share a statement with other writes
 * (select `notify` once in that statement); its values are the placeholders of `changeLogValues`.
 * Seqs are taken under the change-log lock held shared until commit: concurrent writers commit
 * in any order (and share WAL flushes), and readers never look past a stable head, below which
 * nothing is in flight: one announced by the commits (AnnouncedHead) or read under the lock
 * (`underStableHead`). The NOTIFY is delivered by PostgreSQL
 * only when the transaction commits.
 */
export const changeLogAppend = {
  parts: [
    sql`change_lock AS (SELECT pg_advisory_xact_lock_shared(${sql.raw(String(CHANGE_LOG_LOCK))}))`,
    sql`change_rows AS (
      INSERT INTO change_log (entity, op, entity_id, tour_id, account_id, data, event_ids)
      SELECT e.v->>'entity', e.v->>'op', e.v->>'entity_id', (e.v->>'tour_id')::uuid, (e.v->>'account_id')::bigint, NULLIF(e.v->'data', 'null'::jsonb),
        CASE WHEN e.v ? 'event_ids' THEN ARRAY(SELECT jsonb_array_elements_text(e.v->'event_ids'))::uuid[] END
      FROM change_lock, jsonb_array_elements(${sql.placeholder('changes')}::jsonb) WITH ORDINALITY AS e(v, n)
      ORDER BY e.n
      RETURNING seq, account_id)`,
  ],
  // "<first>-<last>,...:<audience>": the seqs taken, as runs (gaps and islands), so that a listener
  // knows which seqs have committed (AnnouncedHead); "?" when the runs do not fit.
  notify: sql`(SELECT pg_notify('${sql.raw(CHANGES_CHANNEL)}', CASE WHEN length(r.runs) > ${sql.raw(String(MAX_RUNS_CHARS))} THEN '?' ELSE r.runs END || ':' || ${sql.placeholder('audience')}::text)
    FROM (SELECT string_agg(lo || '-' || hi, ',' ORDER BY lo) AS runs
          FROM (SELECT min(seq) AS lo, max(seq) AS hi
                FROM (SELECT seq, seq - row_number() OVER (ORDER BY seq) AS run FROM change_rows) s GROUP BY run) i) r)`,
  /** The highest seq taken per account that sees the change (`{ "<account>": seq }`). */
  accountSeqs: sql`(SELECT jsonb_object_agg(account_id, seq) FROM (SELECT account_id, max(seq) AS seq FROM change_rows WHERE account_id IS NOT NULL GROUP BY account_id) s)`,
};

/** The values of `changeLogAppend` for these change records. */
export function changeLogValues(changes: ChangeRecord[]): { changes: string; audience: string } {
  // The payload names whom the commit concerns ("<seqs>:<account>,..." or "<seqs>:*" when
  // every account sees something), so an instance wakes only the sockets that have something to read.
  // A change for more accounts than fit is announced as "*": every instance wakes its own sockets,
  // and each reads only what its account may see.
  const owners = new Set(changes.map((c) => c.accountId ?? null));
  const named = owners.has(null) ? '*' : [...owners].join(',');
  return {
    changes: JSON.stringify(
      changes.map((c) => ({
        entity: c.entity,
        op: c.op,
        entity_id: c.id,
        tour_id: c.tourId ?? null,
        account_id: c.accountId ?? null,
        data: c.data ?? null,
        ...(c.eventIds?.length ? { event_ids: c.eventIds } : {}),
      })),
    ),
    audience: named.length > MAX_AUDIENCE_CHARS ? '*' : named,
  };
}

/** The change channel's payload that tells every instance an account was deactivated: its sockets close. */
export const deactivatedPayload = (personalnummer: number) => `deactivated:${personalnummer}`;

/** Announces, at commit, that an account was deactivated. */
export async function announceDeactivation(tx: Db, personalnummer: number) {
  await tx.execute(sql`SELECT pg_notify(${CHANGES_CHANNEL}, ${deactivatedPayload(personalnummer)})`);
}

/** Appends change records to the transaction (see `changeLogAppend`); answers the highest seq taken. */
export async function recordChanges(tx: Db, changes: ChangeRecord[]): Promise<number | undefined> {
  if (changes.length === 0) return undefined;
  const [result] = await executePrepared<{ max_seq: string }>(
    tx,
    'change_log_append',
    () => sql`WITH ${sql.join(changeLogAppend.parts, sql`, `)}
    SELECT (SELECT max(seq) FROM change_rows)::text AS max_seq, ${changeLogAppend.notify}`,
    changeLogValues(changes),
  );
  return Number(result.max_seq);
}

/** The highest seq drawn so far; under the change-log lock taken exclusively, the stable head. */
export const sequenceHead = sql`(SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM change_log_seq_seq)`;

/**
 * Takes the change-log lock exclusively for the rest of the transaction, sent ahead of its next
 * statement: that waits until every writer holding a number has committed or aborted, and no
 * writer draws one until the transaction ends. A statement after it may read the stable head
 * from the sequence (`sequenceHead`), and its snapshot sees every change up to it. Failing, it
 * aborts the transaction, so the next statement fails too.
 */
function lockStableHead(tx: Db): Promise<unknown> {
  const locked = executePrepared(tx, 'stable_head_lock', () => sql`SELECT pg_advisory_xact_lock(${sql.raw(String(CHANGE_LOG_LOCK))})`);
  locked.catch(() => undefined);
  return locked;
}

/**
 * Runs `statement` under the stable head's lock, in a transaction of its own: BEGIN, `settings`,
 * the lock, the statement and COMMIT go out in one write. The lock goes with the commit, so new
 * writers wait for it only while the writers ahead of it commit and the statement runs.
 */
export function underStableHead<T>(db: Db, statement: (tx: Db) => Promise<T[]>, settings?: Record<string, string>): Promise<T[]> {
  return oneWriteTransaction(db, statement, { settings, ahead: lockStableHead });
}

/**
 * The highest seq below which every change is committed (and visible to any later statement) or
 * will never be, on its own: for the retention job, which deletes below it afterwards. A read of
 * the log takes the lock in its own transaction instead.
 */
export async function stableHead(db: Db): Promise<number> {
  const [row] = await underStableHead(db, (tx) =>
    executePrepared<{ head: string }>(tx, 'stable_head', () => sql`SELECT ${sequenceHead}::text AS head`),
  );
  return Number(row.head);
}
