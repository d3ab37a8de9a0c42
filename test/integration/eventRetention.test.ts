import { randomUUID } from 'node:crypto';
import { eq, inArray, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { deliveryItems, processedEvents } from '../../server/db/schema.js';
import { eventWindowStart, pruneProcessedEvents } from '../../server/jobs/eventRetention.js';
import { databaseKinds } from '../helpers/databases.js';
import { newTour } from '../helpers/factories.js';
import { useTestServer } from '../helpers/server.js';

const DAY_MS = 24 * 3600 * 1000;
let nextAccount = 8801;

describe.each(databaseKinds)('processed-event retention on %s', (kind) => {
  const api = useTestServer(kind, { PROCESSED_EVENT_RETENTION_DAYS: '90' });

  async function driverLine() {
    const accountId = nextAccount++;
    const token = await api.token(accountId);
    const tour = await newTour(api.db, {
      accountId,
      positions: [{ scannable: true, quantity: 5, scannedQuantity: 0, state: 'InProgress' }],
    });
    return { accountId, token, line: tour.deliveries[0].items[0] };
  }
  const scan = (deliveryItemId: string, occurredAt: Date, eventId = randomUUID()) => ({
    eventId,
    occurredAt: occurredAt.toISOString(),
    type: 'scan',
    deliveryItemId,
    action: 'scan',
  });
  const push = (token: string, events: unknown[]) => api.post('/sync/push', { clientId: 'phone-1', events }, { token });
  const scanned = async (id: string) => (await api.db.select().from(deliveryItems).where(eq(deliveryItems.id, id)))[0].scannedQuantity;

  it('refuses an event that occurred before the window, records the refusal, and applies one inside it', async () => {
    const { token, line } = await driverLine();
    const old = scan(line.id, new Date(Date.now() - 91 * DAY_MS));
    const recent = scan(line.id, new Date(Date.now() - 89 * DAY_MS));
    const response = await push(token, [old, recent]);
    expect(response.status).toBe(200);
    expect(response.body.results[0]).toMatchObject({ status: 'rejected', code: 'event_too_old', reason: 'event_too_old' });
    expect(response.body.results[0].errors).toEqual([{ path: 'occurredAt', message: expect.stringContaining('deduplication window') }]);
    expect(response.body.results[1]).toMatchObject({ status: 'applied' });
    expect(await scanned(line.id)).toBe(1);
    // The refusal is final for its id: a copy is answered with it.
    const again = await push(token, [old]);
    expect(again.body.results[0]).toMatchObject({ status: 'duplicate', code: 'event_too_old' });
    // The bulk scan endpoint takes the device's time too.
    const viaScans = await api.post(
      '/scans',
      {
        scans: [
          {
            clientScanId: randomUUID(),
            occurredAt: new Date(Date.now() - 100 * DAY_MS).toISOString(),
            deliveryItemId: line.id,
            action: 'scan',
          },
        ],
      },
      { token },
    );
    expect(viaScans.body.results[0]).toMatchObject({ status: 'rejected', code: 'event_too_old' });
    expect(await scanned(line.id)).toBe(1);
  });

  it('forgets an event id only once the event is older than the window, and a copy then is refused, not applied again', async () => {
    const { token, line } = await driverLine();
    const sent = scan(line.id, new Date(Date.now() - 3600_000));
    expect((await push(token, [sent])).body.results[0].status).toBe('applied');
    const window = eventWindowStart(90);
    expect(await pruneProcessedEvents(api.db, window)).toBe(0);
    // A hundred days pass: the record, and the copy the phone sends again, are as old.
    const shift = 100 * DAY_MS;
    await api.db
      .update(processedEvents)
      .set({
        receivedAt: sql`${processedEvents.receivedAt} - ${`${shift} milliseconds`}::interval`,
        occurredAt: sql`${processedEvents.occurredAt} - ${`${shift} milliseconds`}::interval`,
      })
      .where(eq(processedEvents.eventId, sent.eventId));
    expect(await pruneProcessedEvents(api.db, window)).toBeGreaterThanOrEqual(1);
    expect(await api.db.select().from(processedEvents).where(eq(processedEvents.eventId, sent.eventId))).toEqual([]);
    const copy = { ...sent, occurredAt: new Date(Date.parse(sent.occurredAt) - shift).toISOString() };
    expect((await push(token, [copy])).body.results[0]).toMatchObject({ status: 'rejected', code: 'event_too_old' });
    expect(await scanned(line.id)).toBe(1);
  });

  it('keeps a record while either its device time or its arrival is inside the window, and deletes in batches', async () => {
    const { accountId } = await driverLine();
    const at = (days: number) => new Date(Date.now() - days * DAY_MS);
    const rows = [
      { occurredAt: at(200), receivedAt: at(200) },
      { occurredAt: at(150), receivedAt: at(120) },
      { occurredAt: null, receivedAt: at(100) },
      { occurredAt: at(95), receivedAt: at(10) } /* arrived late */,
      { occurredAt: at(5), receivedAt: at(100) } /* a clock ahead */,
    ].map((r) => ({ eventId: randomUUID(), type: 'scan', accountId, ...r }));
    await api.db.insert(processedEvents).values(rows);
    expect(await pruneProcessedEvents(api.db, eventWindowStart(90), 2)).toBeGreaterThanOrEqual(3);
    const left = await api.db
      .select({ id: processedEvents.eventId })
      .from(processedEvents)
      .where(
        inArray(
          processedEvents.eventId,
          rows.map((r) => r.eventId),
        ),
      );
    expect(left.map((r) => r.id).sort()).toEqual([rows[3].eventId, rows[4].eventId].sort());
  });

  it('has the index the pruning walks, valid', async () => {
    const { rows } = await api.db.execute<{ valid: boolean }>(
      sql`SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = to_regclass('processed_events_received_idx')`,
    );
    expect(rows).toEqual([{ valid: true }]);
  });
});
