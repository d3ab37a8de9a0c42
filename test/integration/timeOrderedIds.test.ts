import { randomUUID } from 'node:crypto';
import { eq, inArray } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { contactSources, deliveries, deliveryItems, processedEvents, scanAudit } from '../../server/db/schema.js';
import { newId } from '../../shared/ids.js';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';
import { tourPayload } from '../helpers/tourPayloads.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
let nextAccount = 7900;

describe.each(databaseKinds)('ids on %s', (kind) => {
  const api = useTestServer(kind);

  async function setup() {
    const accountId = nextAccount++;
    const token = await api.token(accountId);
    const tour = await newTour(api.db, {
      accountId,
      positions: [{ scannable: true, quantity: 5, scannedQuantity: 0, state: 'InProgress' }],
    });
    return { token, delivery: tour.deliveries[0].delivery, line: tour.deliveries[0].items[0] };
  }
  const scan = (eventId: string, deliveryItemId: string) => ({
    eventId,
    occurredAt: new Date().toISOString(),
    type: 'scan',
    deliveryItemId,
    action: 'scan',
  });

  it("applies an old app's random v4 event ids beside time-ordered ones, and answers their repeats duplicate", async () => {
    const { token, line } = await setup();
    const events = [scan(randomUUID(), line.id), scan(newId(), line.id)];
    const first = await api.post('/sync/push', { clientId: 'phone-1', events }, { token });
    expect(first.status).toBe(200);
    expect(first.body.results.map((r: { status: string }) => r.status)).toEqual(['applied', 'applied']);
    const again = await api.post('/sync/push', { clientId: 'phone-1', events }, { token });
    expect(again.body.results.map((r: { status: string }) => r.status)).toEqual(['duplicate', 'duplicate']);
    const audited = await api.db.select({ id: scanAudit.clientScanId }).from(scanAudit).where(eq(scanAudit.deliveryItemId, line.id));
    expect(audited.map((a) => a.id).sort()).toEqual(events.map((e) => e.eventId).sort());
  });

  it('makes time-ordered ids for what it creates itself: event ids of direct calls, notes', async () => {
    const { token, delivery } = await setup();
    const before = Date.now();
    const response = await api.post(`/deliveries/${delivery.id}/notes`, { text: 'Hintereingang' }, { token });
    expect(response.status).toBe(200);
    const noteId: string = response.body.note.id;
    expect(noteId).toMatch(UUID_V7);
    expect(parseInt(noteId.replace(/-/g, '').slice(0, 12), 16)).toBeGreaterThanOrEqual(before);
    const [event] = await api.db.select().from(processedEvents).where(eq(processedEvents.deliveryId, delivery.id));
    expect(event.eventId).toMatch(UUID_V7);
  });

  it("makes time-ordered ids for an imported tour's rows: tour, deliveries, positions, contacts", async () => {
    const accountId = nextAccount++;
    const token = await api.token(accountId);
    const before = Date.now();
    const response = await api.post('/sync/tour', tourPayload(accountId, { deliveries: 2, positions: 3 }), { token });
    expect(response.status).toBe(200);
    const tourId: string = response.body.tour.id;
    const rows = await api.db.select({ id: deliveries.id }).from(deliveries).where(eq(deliveries.tourId, tourId));
    const deliveryIds = rows.map((r) => r.id);
    const items = await api.db.select({ id: deliveryItems.id }).from(deliveryItems).where(inArray(deliveryItems.deliveryId, deliveryIds));
    const sources = await api.db
      .select({ id: contactSources.id })
      .from(contactSources)
      .where(inArray(contactSources.deliveryId, deliveryIds));
    const ids = [tourId, ...deliveryIds, ...items.map((i) => i.id), ...sources.map((c) => c.id)];
    expect(items).toHaveLength(6);
    expect(sources.length).toBeGreaterThan(0);
    ids.forEach((id) => expect(id).toMatch(UUID_V7));
    ids.forEach((id) => expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBeGreaterThanOrEqual(before));
  });
});
