import { and, eq, sql } from 'drizzle-orm';
import type { AppContext } from '../context.js';
import { isDatabaseUnavailable } from '../db/availability.js';
import { attachReport, loadCompletionRecord } from '../engine/complete.js';
import { completions } from '../db/schema.js';
import { DomainError, notFound } from '../errors.js';
import { renderDeliveryReport } from '../integrations/report/deliveryReport.js';
import { loadReportSource } from '../queries/completionReport.js';

type Deps = Pick<AppContext, 'database' | 'documents' | 'erp' | 'logger' | 'config'>;

// A claimed follow-up is not picked again for this long, even when the claiming instance dies midway.
const CLAIM_LEASE_MS = 5 * 60_000;
const BATCH = 10;

export function backoffMs(attempts: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, attempts - 1));
}

/** Renders the delivery report, stores it and links it to the completion; returns the attachment id. */
export async function storeDeliveryReport(deps: Deps, deliveryId: string): Promise<string | undefined> {
  const source = await loadReportSource(deps.database.db, deliveryId);
  if (!source) return undefined;
  const { signatureReferences, ...data } = source;
  const [customer, driver] = await Promise.all([deps.documents.get(signatureReferences.customer), deps.documents.get(signatureReferences.driver)]);
  const pdf = await renderDeliveryReport({ ...data, companyName: deps.config.companyName, signatures: { customer: customer.bytes, driver: driver.bytes } });
  const reference = await deps.documents.put(pdf, 'application/pdf', `Lieferbericht-${data.belegnummer}.pdf`);
  return attachReport(deps.database.db, deliveryId, { reference, contentType: 'application/pdf', sizeBytes: pdf.length });
}

/**
 * Writes the completion back to the ERP (delivered-at, state, payment term, money credit;
 * never line quantities) and records the outcome on the completion. A failure schedules the
 * next attempt with exponential backoff and is rethrown; the completion itself stays.
 */
export async function pushCompletion(deps: Deps, deliveryId: string): Promise<void> {
  const db = deps.database.db;
  const record = await loadCompletionRecord(db, deliveryId);
  if (!record) throw notFound('Completed delivery');
  const { completion, delivery } = record;
  try {
    await deps.erp.pushCompletion({ belegartId: delivery.belegartId, belegnummer: delivery.belegnummer }, {
      deliveredAt: completion.completedAt.toISOString(),
      state: 'completed',
      paymentTerm: delivery.paymentTerm,
      creditAmountCents: delivery.creditAmountCents ?? 0,
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const delay = backoffMs(completion.erpPushAttempts + 1, deps.config.erp.pushRetryBaseMs, deps.config.erp.pushRetryMaxMs);
    await db.update(completions).set({
      erpPushStatus: 'failed',
      erpPushAttempts: sql`${completions.erpPushAttempts} + 1`,
      erpPushError: message.slice(0, 2000),
      erpNextAttemptAt: new Date(Date.now() + delay),
    }).where(eq(completions.deliveryId, deliveryId));
    deps.logger.warn({ deliveryId, err: error, retryInMs: delay }, 'ERP write-back failed');
    throw error instanceof DomainError ? error : new DomainError('upstream_unavailable', `ERP write-back failed: ${message}`);
  }
  await db.update(completions).set({
    erpPushStatus: 'succeeded',
    erpPushAttempts: sql`${completions.erpPushAttempts} + 1`,
    erpPushedAt: new Date(),
    erpPushError: null,
    // A report still missing keeps the follow-up scheduled.
    erpNextAttemptAt: sql`CASE WHEN ${completions.reportAttachmentId} IS NULL THEN now() + ${`${deps.config.erp.pushRetryBaseMs} milliseconds`}::interval END`,
  }).where(eq(completions.deliveryId, deliveryId));
}

/**
 * What follows a committed completion: the report (when missing) and the ERP write-back (when
 * not yet succeeded). Never throws: whatever fails stays scheduled for the retry job.
 */
export async function followUpCompletion(deps: Deps, deliveryId: string): Promise<void> {
  const db = deps.database.db;
  const [row] = await db.select({ report: completions.reportAttachmentId, push: completions.erpPushStatus, attempts: completions.erpPushAttempts })
    .from(completions).where(eq(completions.deliveryId, deliveryId));
  if (!row) return;
  let reportFailed = false;
  if (!row.report) {
    try {
      await storeDeliveryReport(deps, deliveryId);
    } catch (error) {
      reportFailed = true;
      deps.logger.error({ deliveryId, err: error }, 'delivery report failed');
    }
  }
  if (row.push !== 'succeeded') {
    try {
      await pushCompletion(deps, deliveryId);
    } catch {
      return; // pushCompletion recorded the failure and the next attempt
    }
  }
  const delay = backoffMs(row.attempts + 1, deps.config.erp.pushRetryBaseMs, deps.config.erp.pushRetryMaxMs);
  await db.update(completions)
    .set({ erpNextAttemptAt: reportFailed ? new Date(Date.now() + delay) : null })
    .where(eq(completions.deliveryId, deliveryId));
}

const due = (graceMs: number) => sql`(${completions.erpPushStatus} <> 'succeeded' OR ${completions.reportAttachmentId} IS NULL)
  AND coalesce(${completions.erpNextAttemptAt}, ${completions.receivedAt} + ${`${graceMs} milliseconds`}::interval) <= now()`;

/** Claims one completion for a follow-up right after its commit, unless someone else already has it. */
async function claim(deps: Deps, deliveryId: string): Promise<boolean> {
  const claimed = await deps.database.db.update(completions)
    .set({ erpNextAttemptAt: sql`now() + ${`${CLAIM_LEASE_MS} milliseconds`}::interval` })
    .where(and(eq(completions.deliveryId, deliveryId), sql`(${completions.erpNextAttemptAt} IS NULL OR ${completions.erpNextAttemptAt} <= now())`))
    .returning({ id: completions.deliveryId });
  return claimed.length > 0;
}

/**
 * The follow-up of a completion that just committed; it never fails the request. The request
 * waits for it for as long as one ERP attempt may take (`ERP_TIMEOUT_MS`): a hanging ERP and its
 * retries would otherwise hold the driver's phone for half a minute. What is left then goes on
 * after the answer, and a write-back that fails stays scheduled for the retry job as before.
 */
export async function afterCompletion(deps: Deps & Pick<AppContext, 'background'>, deliveryId: string): Promise<void> {
  const followUp = (async () => {
    try {
      if (await claim(deps, deliveryId)) await followUpCompletion(deps, deliveryId);
    } catch (error) {
      deps.logger.error({ deliveryId, err: error }, 'completion follow-up failed');
    }
  })();
  deps.background.add(followUp);
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => { timer = setTimeout(resolve, deps.config.erp.timeoutMs); });
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

export interface ErpWriteBackJob { stop(): Promise<void> }

/** Polls for due follow-ups (failed write-backs, missing reports) until stopped. */
export function startErpWriteBackJob(deps: Deps): ErpWriteBackJob {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const tick = () => {
    running = runDueFollowUps(deps)
      .then(() => undefined)
      // It runs again at the next poll; an outage is logged by the database health, not with a stack per poll.
      .catch((error) => (isDatabaseUnavailable(error) ? deps.logger.warn('ERP write-back job: database unavailable')
        : deps.logger.error({ err: error }, 'ERP write-back job failed')))
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(tick, deps.config.erp.pushPollMs).unref();
      });
  };
  timer = setTimeout(tick, deps.config.erp.pushPollMs).unref();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
