import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { DriverActor } from '../../server/context.js';
import type { Db } from '../../server/db/client.js';
import { keepCompletedEntryHead } from '../../server/engine/completedEntries.js';
import {
  accounts,
  articles,
  attachments,
  completions,
  contactChannels,
  contactSources,
  customers,
  deliveries,
  deliveryItems,
  tours,
} from '../../server/db/schema.js';
import type { Address, ContactKind, ContactRole } from '../../shared/schemas/common.js';
import type { ItemState } from '../../shared/schemas/deliveries.js';

export interface NewPosition {
  scannable?: boolean;
  quantity?: number;
  /** Defaults to Done with every piece scanned for scannable lines, InProgress for the others. */
  state?: ItemState;
  scannedQuantity?: number;
  creditedQuantity?: number;
  unitPriceCents?: number | null;
  articleName?: string;
  unit?: string;
}

export interface NewTourOptions {
  accountId: number;
  accountName?: string;
  deliveries?: number;
  tourDate?: string;
  /** The positions of every delivery; by default one scanned line and one service line. */
  positions?: NewPosition[];
  openAmountCents?: number;
  paymentMethodId?: string | null;
  paymentTerm?: string | null;
  customerName?: string;
}

export const sampleAddress = (street = 'Hauptstraße'): Address => ({
  street,
  houseNumber: '12a',
  postalCode: '10115',
  city: 'Berlin',
  country: 'DE',
  addition: null,
});

const defaultPositions: NewPosition[] = [
  { scannable: true, quantity: 2, unitPriceCents: 1250, articleName: 'Mineralwasser 12 x 1 l' },
  { scannable: false, quantity: 1, unitPriceCents: 500, articleName: 'Lieferpauschale' },
];

let counter = 0;
const unique = () => `${Date.now().toString(36)}${(counter++).toString(36)}${randomUUID().slice(0, 6)}`;

/** A driver as the engine gets it from a request, its token valid for an hour. */
export const driverActor = (personalnummer: number): DriverActor => ({
  kind: 'driver',
  personalnummer,
  tokenExpiresAt: Date.now() + 3600_000,
  syncRole: false,
});

/** A scan event of the outbox, new id, occurring now. */
export const scanEvent = (deliveryItemId: string, action: 'scan' | 'remove' = 'scan') => ({
  eventId: randomUUID(),
  occurredAt: new Date().toISOString(),
  type: 'scan' as const,
  deliveryItemId,
  action,
});

export type NewTour = Awaited<ReturnType<typeof newTour>>;

/**
 * A tour of one account with deliveries and positions, inserted directly (no events, no
 * change records): the smallest setup for tests of what happens on a delivery.
 */
export async function newTour(db: Db, options: NewTourOptions) {
  const { accountId } = options;
  await db
    .insert(accounts)
    .values({ personalnummer: accountId, name: options.accountName ?? `Fahrer ${accountId}` })
    .onConflictDoNothing();
  const [tour] = await db
    .insert(tours)
    .values({
      accountId,
      tourDate: options.tourDate ?? `2026-${String(1 + (counter % 12)).padStart(2, '0')}-${String(1 + (counter % 28)).padStart(2, '0')}`,
      name: 'Tour Nord',
    })
    .onConflictDoUpdate({ target: [tours.accountId, tours.tourDate], set: { name: 'Tour Nord' } })
    .returning();
  const [customer] = await db
    .insert(customers)
    .values({
      erpCustomerId: Math.floor(Math.random() * 1e12) + 1,
      name: options.customerName ?? 'Bäckerei Sonnenschein GmbH',
      address: sampleAddress('Marktplatz'),
    })
    .returning();

  const created = [];
  for (let d = 0; d < (options.deliveries ?? 1); d++) {
    const [delivery] = await db
      .insert(deliveries)
      .values({
        tourId: tour.id,
        belegartId: 1,
        belegnummer: `LS-${unique()}`,
        customerId: customer.id,
        deliveryAddress: sampleAddress(),
        sortOrder: d + 1,
        erpOpenAmountCents: options.openAmountCents ?? 0,
        paymentMethodId: options.paymentMethodId ?? null,
        paymentTerm: options.paymentTerm ?? '14 Tage netto',
      })
      .returning();
    const items = [];
    for (const [index, position] of (options.positions ?? defaultPositions).entries()) {
      const scannable = position.scannable ?? true;
      const quantity = position.quantity ?? 1;
      const [article] = await db
        .insert(articles)
        .values({
          articleNumber: `A-${unique()}`,
          name: position.articleName ?? `Artikel ${index + 1}`,
          scannable,
        })
        .returning();
      const [item] = await db
        .insert(deliveryItems)
        .values({
          deliveryId: delivery.id,
          lineNumber: (index + 1) * 10,
          articleId: article.id,
          requiredQuantity: quantity,
          scannedQuantity: position.scannedQuantity ?? (scannable ? quantity : 0),
          creditedQuantity: position.creditedQuantity ?? 0,
          state: position.state ?? (scannable ? 'Done' : 'InProgress'),
          unit: position.unit ?? 'Stk',
          unitPriceCents: position.unitPriceCents === undefined ? 1000 : position.unitPriceCents,
        })
        .returning();
      items.push(item);
    }
    created.push({ delivery, items });
  }
  return { tour, customer, deliveries: created };
}

/**
 * Completes a delivery at a chosen instant, with the signature attachments and completion row
 * the completion writes, for tests that need completions on particular days.
 */
export async function completeAt(db: Db, deliveryId: string, completedAt: Date) {
  const [{ accountId }] = await db
    .select({ accountId: tours.accountId })
    .from(deliveries)
    .innerJoin(tours, eq(tours.id, deliveries.tourId))
    .where(eq(deliveries.id, deliveryId));
  const [customerSignature, driverSignature] = await db
    .insert(attachments)
    .values(
      (['customer_signature', 'driver_signature'] as const).map((kind) => ({
        deliveryId,
        kind,
        reference: `test/${randomUUID()}.png`,
        contentType: 'image/png',
        sizeBytes: 68,
      })),
    )
    .returning();
  const [completion] = await db
    .insert(completions)
    .values({
      deliveryId,
      accountId,
      completedAt,
      customerSignatureId: customerSignature.id,
      driverSignatureId: driverSignature.id,
    })
    .returning();
  await db.update(deliveries).set({ state: 'completed', completedAt }).where(eq(deliveries.id, deliveryId));
  await keepCompletedEntryHead(db, eq(deliveries.id, deliveryId));
  return completion;
}

export interface NewContact {
  role: ContactRole;
  name1?: string;
  address?: Address | null;
  channels?: { kind: ContactKind; value: string }[];
}

/** A contact source with its channels on a delivery, as the tour import stores it. */
export async function addContact(db: Db, deliveryId: string, contact: NewContact, position = 1) {
  const [source] = await db
    .insert(contactSources)
    .values({
      deliveryId,
      role: contact.role,
      roles: [contact.role],
      position,
      name1: contact.name1 ?? 'Erika Mustermann',
      address: contact.address ?? null,
    })
    .returning();
  const channels = contact.channels ?? [];
  if (channels.length) {
    await db
      .insert(contactChannels)
      .values(channels.map((c, i) => ({ sourceId: source.id, kind: c.kind, position: i + 1, value: c.value })));
  }
  return source;
}
