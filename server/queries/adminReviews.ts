import { and, asc, eq, inArray, or, sql } from 'drizzle-orm';
import { deductedPieces, isPositionModified, reviewState, type ReviewPosition } from '../../shared/rules/review.js';
import type { PendingReviewResponse, ReviewChange } from '../../shared/schemas/admin.js';
import type { Db } from '../db/client.js';
import {
  accounts,
  articles,
  cars,
  creditEvents,
  customers,
  deliveries,
  deliveryItems,
  notes,
  reviewResolutions,
  scanAudit,
  tours,
} from '../db/schema.js';
import { deliveryModifiedSql, outerDeliveryId } from '../db/deliverySql.js';
import { iso, isoOrNull, micros } from './adminShapes.js';
import { cutPage, type Page, type PageRequest } from './page.js';

// The latest deviation-relevant change and confirmation, kept on the delivery by the engine (engine/reviewMarker.ts).
const lastChangeAt = sql`${deliveries.reviewChangedAt}`;
const lastResolvedAt = sql`${deliveries.reviewResolvedAt}`;
const lastProcessor = sql<string | null>`(SELECT ${reviewResolutions.processor} FROM ${reviewResolutions}
  WHERE ${reviewResolutions.deliveryId} = ${outerDeliveryId} ORDER BY ${reviewResolutions.resolvedAt} DESC LIMIT 1)`;

const reviewTimes = {
  lastChangeUs: micros(lastChangeAt),
  lastResolvedUs: micros(lastResolvedAt),
  lastProcessor,
};

const fromMicros = (us: number | null) => (us === null ? null : new Date(Math.floor(us / 1000)).toISOString());

export interface ReviewStatus {
  pending: boolean;
  last_change_at: string | null;
  last_resolution: { processor: string; resolved_at: string } | null;
}

const resolutionOf = (row: { lastResolvedUs: number | null; lastProcessor: string | null }) =>
  row.lastResolvedUs === null ? null : { processor: row.lastProcessor ?? '', resolved_at: fromMicros(row.lastResolvedUs)! };

/**
 * Review status of the given deliveries in one query; `positions` and the credit must be the
 * current ones (the caller has them already).
 */
export async function reviewStatuses(
  db: Db,
  current: { id: string; creditAmountCents: number | null; positions: ReviewPosition[] }[],
): Promise<Map<string, ReviewStatus>> {
  if (current.length === 0) return new Map();
  const rows = await db
    .select({ id: deliveries.id, ...reviewTimes })
    .from(deliveries)
    .where(
      inArray(
        deliveries.id,
        current.map((d) => d.id),
      ),
    );
  const times = new Map(rows.map((r) => [r.id, r]));
  return new Map(
    current.map((d) => {
      const t = times.get(d.id)!;
      const state = reviewState({
        positions: d.positions,
        creditAmountCents: d.creditAmountCents,
        changeTimes: t.lastChangeUs === null ? [] : [t.lastChangeUs],
        resolvedAt: t.lastResolvedUs,
      });
      return [d.id, { pending: state.pending, last_change_at: fromMicros(state.lastChangeAt), last_resolution: resolutionOf(t) }];
    }),
  );
}

type ScanChangeRow = Awaited<ReturnType<typeof loadScanChanges>>[number];
type CreditChangeRow = Awaited<ReturnType<typeof loadCreditChanges>>[number];
type ReasonNoteRow = Awaited<ReturnType<typeof loadReasonNotes>>[number];

const loadScanChanges = (db: Db, ids: string[]) =>
  db
    .select({
      deliveryId: scanAudit.deliveryId,
      itemId: scanAudit.deliveryItemId,
      action: scanAudit.action,
      quantity: scanAudit.quantity,
      reason: scanAudit.reason,
      stateAfter: scanAudit.stateAfter,
      creditedAfter: scanAudit.creditedQuantityAfter,
      accountId: scanAudit.accountId,
      carId: scanAudit.authorCarId,
      carPlate: cars.plate,
      occurredAt: scanAudit.occurredAt,
      receivedAt: scanAudit.receivedAt,
      receivedUs: micros(scanAudit.receivedAt),
      lineNumber: deliveryItems.lineNumber,
      requiredQuantity: deliveryItems.requiredQuantity,
      articleNumber: articles.articleNumber,
      articleName: articles.name,
    })
    .from(scanAudit)
    .innerJoin(deliveryItems, eq(deliveryItems.id, scanAudit.deliveryItemId))
    .innerJoin(articles, eq(articles.id, deliveryItems.articleId))
    .leftJoin(cars, eq(cars.id, scanAudit.authorCarId))
    .where(and(inArray(scanAudit.deliveryId, ids), inArray(scanAudit.action, ['remove', 'unremove'])))
    .orderBy(asc(scanAudit.receivedAt), asc(scanAudit.id));

const loadCreditChanges = (db: Db, ids: string[]) =>
  db
    .select({
      deliveryId: creditEvents.deliveryId,
      action: creditEvents.action,
      amountCents: creditEvents.amountCents,
      reason: creditEvents.reason,
      accountId: creditEvents.accountId,
      carId: creditEvents.authorCarId,
      carPlate: cars.plate,
      occurredAt: creditEvents.occurredAt,
      receivedAt: creditEvents.receivedAt,
      receivedUs: micros(creditEvents.receivedAt),
    })
    .from(creditEvents)
    .leftJoin(cars, eq(cars.id, creditEvents.authorCarId))
    .where(inArray(creditEvents.deliveryId, ids))
    .orderBy(asc(creditEvents.receivedAt), asc(creditEvents.occurredAt));

const loadReasonNotes = (db: Db, ids: string[]) =>
  db
    .select({
      id: notes.id,
      deliveryId: notes.deliveryId,
      text: notes.text,
      imageAttachment: notes.imageAttachment,
      itemId: notes.creditDeliveryItemId,
      isAmountCreditNote: notes.isAmountCreditNote,
    })
    .from(notes)
    .where(and(inArray(notes.deliveryId, ids), or(sql`${notes.creditDeliveryItemId} IS NOT NULL`, eq(notes.isAmountCreditNote, true))))
    .orderBy(asc(notes.createdAt));

const loadPositions = (db: Db, ids: string[]) =>
  db
    .select({
      id: deliveryItems.id,
      deliveryId: deliveryItems.deliveryId,
      lineNumber: deliveryItems.lineNumber,
      state: deliveryItems.state,
      requiredQuantity: deliveryItems.requiredQuantity,
      scannedQuantity: deliveryItems.scannedQuantity,
      creditedQuantity: deliveryItems.creditedQuantity,
      articleNumber: articles.articleNumber,
      articleName: articles.name,
    })
    .from(deliveryItems)
    .innerJoin(articles, eq(articles.id, deliveryItems.articleId))
    .where(inArray(deliveryItems.deliveryId, ids))
    .orderBy(asc(deliveryItems.lineNumber));

const groupBy = <T extends { deliveryId: string }>(rows: T[]) => {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const group = groups.get(row.deliveryId);
    if (group) group.push(row);
    else groups.set(row.deliveryId, [row]);
  }
  return (id: string) => groups.get(id) ?? [];
};

const noteRef = (note: ReasonNoteRow | undefined) =>
  note ? { id: note.id, text: note.text, image_attachment: note.imageAttachment } : null;

/**
 * The audit entries of one delivery as review changes, oldest first. A line's reason note is
 * the note naming the line; unremove deletes it, so it belongs to removals after the line's
 * last unremove. The money credit's reason note likewise belongs to credits set after the last
 * credit removal.
 */
function describeChanges(scans: ScanChangeRow[], credits: CreditChangeRow[], reasonNotes: ReasonNoteRow[], resolvedUs: number | null) {
  const lastOf = <T>(rows: T[], match: (row: T) => boolean) => rows.filter(match).at(-1);
  const creditNote = lastOf(reasonNotes, (n) => n.isAmountCreditNote);
  const lastCreditRemovalUs = lastOf(credits, (c) => c.action === 'remove')?.receivedUs ?? -Infinity;
  const lastUnremoveUs = new Map(scans.filter((s) => s.action === 'unremove').map((s) => [s.itemId, s.receivedUs]));
  const lineNote = new Map(reasonNotes.filter((n) => n.itemId !== null).map((n) => [n.itemId!, n]));
  const deducted = new Map<string, number>();
  const changes: (ReviewChange & { us: number })[] = [];
  const common = (row: ScanChangeRow | CreditChangeRow) => ({
    us: row.receivedUs,
    at: iso(row.receivedAt),
    occurred_at: iso(row.occurredAt),
    account_id: row.accountId,
    car_id: row.carId,
    car_plate: row.carPlate,
    reason: row.reason,
    after_last_resolution: resolvedUs === null || row.receivedUs > resolvedUs,
  });

  for (const scan of scans) {
    const before = deducted.get(scan.itemId) ?? 0;
    const after = deductedPieces({ state: scan.stateAfter, requiredQuantity: scan.requiredQuantity, creditedQuantity: scan.creditedAfter });
    deducted.set(scan.itemId, after);
    const isRemoval = scan.action === 'remove';
    changes.push({
      ...common(scan),
      kind: !isRemoval ? 'line_restored' : scan.quantity === null ? 'line_removed' : 'pieces_credited',
      delivery_item_id: scan.itemId,
      line_number: scan.lineNumber,
      article_number: scan.articleNumber,
      article_name: scan.articleName,
      quantity: Math.abs(after - before),
      amount_cents: null,
      reason_note:
        isRemoval && scan.receivedUs > (lastUnremoveUs.get(scan.itemId) ?? -Infinity) ? noteRef(lineNote.get(scan.itemId)) : null,
    });
  }

  let creditAmount: number | null = null;
  for (const credit of credits) {
    const isSet = credit.action === 'set';
    const amount = isSet ? credit.amountCents : creditAmount;
    creditAmount = isSet ? credit.amountCents : null;
    changes.push({
      ...common(credit),
      kind: isSet ? 'money_credit_set' : 'money_credit_removed',
      delivery_item_id: null,
      line_number: null,
      article_number: null,
      article_name: null,
      quantity: null,
      amount_cents: amount,
      reason_note: isSet && credit.receivedUs > lastCreditRemovalUs ? noteRef(creditNote) : null,
    });
  }
  return changes.sort((a, b) => a.us - b.us).map(({ us: _us, ...change }) => change);
}

/**
 * The deliveries whose latest deviation-relevant change (a removal or its undoing, a money credit
 * set or removed) is newer than their latest confirmation, or that were never confirmed: the
 * predicate of the partial index deliveries_review_pending_idx (db/lateIndexes.ts), which holds
 * only these. Comparing every deviating delivery's audit times instead grew with every delivery
 * that ever deviated (measured in 1bcf742).
 */
const changedSinceConfirmed = sql`(${deliveries.reviewChangedAt} > ${deliveries.reviewResolvedAt}
  OR (${deliveries.reviewChangedAt} IS NOT NULL AND ${deliveries.reviewResolvedAt} IS NULL))`;

type Candidate = Awaited<ReturnType<typeof reviewCandidates>>[number];

const reviewCandidates = (db: Db) =>
  db
    .select({
      id: deliveries.id,
      belegnummer: deliveries.belegnummer,
      belegartId: deliveries.belegartId,
      state: deliveries.state,
      completedAt: deliveries.completedAt,
      creditAmountCents: deliveries.creditAmountCents,
      tourId: tours.id,
      tourDate: tours.tourDate,
      driverPersonalnummer: accounts.personalnummer,
      driverName: accounts.name,
      customerId: customers.id,
      erpCustomerId: customers.erpCustomerId,
      customerName: customers.name,
      ...reviewTimes,
    })
    .from(deliveries)
    .innerJoin(tours, eq(tours.id, deliveries.tourId))
    .innerJoin(accounts, eq(accounts.personalnummer, tours.accountId))
    .innerJoin(customers, eq(customers.id, deliveries.customerId))
    .where(and(changedSinceConfirmed, deliveryModifiedSql));

/** A review's place in the list: its latest change (microseconds since the epoch), then the delivery id. */
export type ReviewKey = [lastChangeUs: number, deliveryId: string];

const compareKeys = (a: ReviewKey, b: ReviewKey) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);

type Keyed = { key: ReviewKey; review: PendingReviewResponse };

/**
 * Deliveries waiting for the four-eyes review, oldest change first, in five queries whatever
 * their number. The database narrows to deliveries that deviate now and changed after their
 * latest confirmation; the pure rule then decides on the exact times and positions.
 */
export async function pendingReviews(db: Db): Promise<PendingReviewResponse[]> {
  const reviews = await describeReviews(db, await reviewCandidates(db));
  return reviews.sort((a, b) => compareKeys(a.key, b.key)).map((r) => r.review);
}

/**
 * One page of `pendingReviews`: the candidates after the cursor, in the list's order, are
 * described a page at a time until the page is full (the rule may still drop a candidate).
 */
export async function pendingReviewsPage(db: Db, page: PageRequest<ReviewKey>): Promise<Page<PendingReviewResponse, ReviewKey>> {
  const keyOf = (c: Candidate): ReviewKey => [c.lastChangeUs ?? 0, c.id];
  const candidates = (await reviewCandidates(db))
    .filter((c) => page.after === null || compareKeys(keyOf(c), page.after) > 0)
    .sort((a, b) => compareKeys(keyOf(a), keyOf(b)));
  const found: Keyed[] = [];
  for (let start = 0; start < candidates.length && found.length <= page.limit; start += page.limit + 1) {
    found.push(...(await describeReviews(db, candidates.slice(start, start + page.limit + 1))));
  }
  return cutPage(
    found.sort((a, b) => compareKeys(a.key, b.key)),
    page.limit,
    (r) => r.key,
    (r) => r.review,
  );
}

/** The candidates that are pending by the rule, with the changes from the audit. */
async function describeReviews(db: Db, candidates: Candidate[]): Promise<Keyed[]> {
  if (candidates.length === 0) return [];
  const ids = candidates.map((c) => c.id);
  const [positions, scans, credits, reasonNotes] = await Promise.all([
    loadPositions(db, ids),
    loadScanChanges(db, ids),
    loadCreditChanges(db, ids),
    loadReasonNotes(db, ids),
  ]).then(([p, s, c, n]) => [groupBy(p), groupBy(s), groupBy(c), groupBy(n)] as const);

  const reviews: Keyed[] = [];
  for (const d of candidates) {
    const scanRows = scans(d.id);
    const creditRows = credits(d.id);
    const state = reviewState({
      positions: positions(d.id),
      creditAmountCents: d.creditAmountCents,
      changeTimes: [...scanRows, ...creditRows].map((row) => row.receivedUs),
      resolvedAt: d.lastResolvedUs,
    });
    if (!state.pending || !state.deviation) continue;
    reviews.push({
      key: [state.lastChangeAt ?? 0, d.id],
      review: {
        delivery_id: d.id,
        belegnummer: d.belegnummer,
        belegart_id: d.belegartId,
        tour_id: d.tourId,
        tour_date: d.tourDate,
        driver: { personalnummer: d.driverPersonalnummer, name: d.driverName },
        customer: { id: d.customerId, erp_customer_id: d.erpCustomerId, name: d.customerName },
        state: d.state,
        completed_at: isoOrNull(d.completedAt),
        deviation: {
          removed_lines: state.deviation.removedLines,
          credited_lines: state.deviation.creditedLines,
          credited_pieces: state.deviation.creditedPieces,
          money_credit_cents: state.deviation.moneyCreditCents,
        },
        modified_positions: positions(d.id)
          .filter(isPositionModified)
          .map((p) => ({
            id: p.id,
            line_number: p.lineNumber,
            article_number: p.articleNumber,
            article_name: p.articleName,
            state: p.state,
            required_quantity: p.requiredQuantity,
            scanned_quantity: p.scannedQuantity,
            credited_quantity: p.creditedQuantity,
          })),
        last_change_at: fromMicros(state.lastChangeAt),
        last_resolution: resolutionOf(d),
        changes: describeChanges(scanRows, creditRows, reasonNotes(d.id), d.lastResolvedUs),
      },
    });
  }
  return reviews;
}
