import { and, eq, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { completions } from '../../db/schema.js';
import { storeDeliveryReport } from './report.js';
import { backoffMs, pushCompletion } from './writeBack.js';

export type FollowUpDeps = Pick<AppContext, 'database' | 'documents' | 'erp' | 'logger' | 'config' | 'background'>;
type Deps = Omit<FollowUpDeps, 'background'>;

// A claimed follow-up is not picked again for this long, even when the claiming instance dies midway.
const CLAIM_LEASE_MS = 5 * 60_000;
const BATCH = 10;

/**
 * What follows a committed completion: the report and the ERP write-back that names it (the
 * write-back stores the report first when it is missing). Never throws: whatever fails stays
 * scheduled for the retry job, and a write-back the ERP refused waits for an admin push.
 */
export async function followUpCompletion(deps: Deps, deliveryId: string): Promise<void> {
  const db = deps.database.db;
  const [row] = await db
    .select({ report: completions.reportAttachmentId, push: completions.erpPushStatus, attempts: completions.erpPushAttempts })
    .from(completions)
    .where(eq(completions.deliveryId, deliveryId));
  if (!row) return;
  try {
    if (row.push === 'pending' || row.push === 'failed') await pushCompletion(deps, deliveryId);
    else if (!row.report) await storeDeliveryReport(deps, deliveryId);
  } catch (error) {
    // A failed write-back recorded its failure and its next attempt; a report alone did not.
    if (row.push === 'pending' || row.push === 'failed') return;
    deps.logger.error({ deliveryId, err: error }, 'delivery report failed');
    const delay = backoffMs(row.attempts + 1, deps.config.erp.pushRetryBaseMs, deps.config.erp.pushRetryMaxMs);
    await db
      .update(completions)
      .set({ erpNextAttemptAt: new Date(Date.now() + delay) })
      .where(eq(completions.deliveryId, deliveryId));
    return;
  }
  await db.update(completions).set({ erpNextAttemptAt: null }).where(eq(completions.deliveryId, deliveryId));
}

// A rejected write-back is not due: it waits for POST /admin/push-completion (its report is stored: the write-back names it).
const due = (
  graceMs: number,
) => sql`((${completions.erpPushStatus} <> 'succeeded' AND ${completions.erpPushStatus} <> 'rejected') OR ${completions.reportAttachmentId} IS NULL)
  AND coalesce(${completions.erpNextAttemptAt}, ${completions.receivedAt} + ${`${graceMs} milliseconds`}::interval) <= now()`;

/** Claims one completion for a follow-up right after its commit, unless someone else already has it. */
async function claim(deps: Deps, deliveryId: string): Promise<boolean> {
  const claimed = await deps.database.db
    .update(completions)
    .set({ erpNextAttemptAt: sql`now() + ${`${CLAIM_LEASE_MS} milliseconds`}::interval` })
    .where(
      and(
        eq(completions.deliveryId, deliveryId),
        sql`(${completions.erpNextAttemptAt} IS NULL OR ${completions.erpNextAttemptAt} <= now())`,
      ),
    )
    .returning({ id: completions.deliveryId });
  return claimed.length > 0;
}

/**
 * The follow-up of a completion that just committed; it never fails the request. The request
 * waits for it for as long as one ERP attempt may take (`ERP_TIMEOUT_MS`): a hanging ERP and its
 * retries would otherwise hold the driver's phone for half a minute. What is left then goes on
 * after the answer, and a write-back that fails stays scheduled for the retry job as before.
 */
export async function afterCompletion(deps: FollowUpDeps, deliveryId: string): Promise<void> {
  const followUp = (async () => {
    try {
      if (await claim(deps, deliveryId)) await followUpCompletion(deps, deliveryId);
    } catch (error) {
      deps.logger.error({ deliveryId, err: error }, 'completion follow-up failed');
    }
  })();
  deps.background.add(followUp);
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, deps.config.erp.timeoutMs);
  });
  await Promise.race([followUp, waited]);
  clearTimeout(timer);
}

/** Claims due follow-ups (several instances never take the same one) and runs them; returns how many ran. */
export async function runDueFollowUps(deps: Deps): Promise<number> {
  const result = await deps.database.db.execute<{ delivery_id: string }>(sql`
    UPDATE completions SET erp_next_attempt_at = now() + ${`${CLAIM_LEASE_MS} milliseconds`}::interval
    WHERE delivery_id IN (
      SELECT delivery_id FROM completions WHERE ${due(deps.config.erp.pushRetryBaseMs)}
      ORDER BY completed_at LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
    RETURNING delivery_id`);
  for (const { delivery_id: deliveryId } of result.rows) await followUpCompletion(deps, deliveryId);
  return result.rows.length;
}
