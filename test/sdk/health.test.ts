import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryAttachmentStore } from '../../client-sdk/attachments.js';
import { HEALTH_INTERVAL_MS, HealthReporter } from '../../client-sdk/health.js';
import { Outbox, type OutboxAction } from '../../client-sdk/outbox.js';
import { ProblemError } from '../../client-sdk/problem.js';
import { JsonStore, MemoryStore } from '../../client-sdk/storage/keyValue.js';
import { DEVICE_REPORT_MAX_BYTES, DeviceReport } from '../../shared/schemas/devices.js';

const DELIVERY = '11111111-1111-4111-8111-111111111111';
let counter = 0;
const uuid = () => `00000000-0000-4000-8000-${String(++counter).padStart(12, '0')}`;

async function setUp(post: (report: DeviceReport) => Promise<void> = async () => undefined) {
  const store = new JsonStore(new MemoryStore());
  const outbox = await Outbox.load(store);
  const attachments = new MemoryAttachmentStore();
  const sent: DeviceReport[] = [];
  const reporter = new HealthReporter({
    store,
    outbox,
    attachments,
    now: Date.now,
    randomId: uuid,
    random: Math.random,
    deliveryOfAction: (action) => (action.kind === 'event' ? undefined : action.deliveryId),
    app: { name: 'Fahrer-App', version: '3.2.1' },
    sync: () => ({ lastPushAt: null, lastPullAt: null, lastErrorCode: null }),
    sendOnSocket: () => false,
    post: async (report) => {
      sent.push(report);
      await post(report);
    },
    maySend: () => true,
  });
  await reporter.load();
  const complete = async (text: string) => {
    const signature = uuid();
    await attachments.put(signature, new Uint8Array(1000));
    return outbox.add(
      uuid(),
      {
        kind: 'completion',
        deliveryId: DELIVERY,
        occurredAt: new Date().toISOString(),
        acknowledgements: { receiptConfirmed: true, internalNote: text, clientEventId: uuid() },
        customerSignature: signature,
        driverSignature: signature,
      },
      Date.now(),
    );
  };
  return { reporter, outbox, sent, complete, store };
}

/** Lets the timers due by now run and the reports they start settle. */
const advance = async (ms: number) => {
  await vi.advanceTimersByTimeAsync(ms);
};

describe('the SDK health report', () => {
  beforeEach(() => vi.useFakeTimers({ now: Date.parse('2026-12-07T10:00:00Z') }));
  afterEach(() => vi.useRealTimers());

  it('goes at once on start, on the first pending action, on each completion queued and on the emptied outbox, otherwise once a minute', async () => {
    const { reporter, outbox, sent, complete } = await setUp();
    reporter.start();
    await advance(0);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ pendingCount: 0, appName: 'Fahrer-App', platform: 'node' });

    await advance(5000);
    const entry = await complete('Hund bellt');
    reporter.observe();
    await advance(0);
    expect(sent).toHaveLength(2);
    expect(sent[1]).toMatchObject({ pendingCount: 1, pendingCompletionCount: 1, oldestPending: { type: 'delivery.complete' } });

    // A scan behind it is no news: it waits for the next report.
    const scan: OutboxAction = {
      kind: 'event',
      event: { type: 'scan', eventId: uuid(), occurredAt: new Date().toISOString(), deliveryItemId: uuid(), action: 'scan' },
    };
    await outbox.add(uuid(), scan, Date.now());
    reporter.observe();
    await advance(HEALTH_INTERVAL_MS - 1000);
    expect(sent).toHaveLength(2);
    await advance(1000);
    expect(sent).toHaveLength(3);
    expect(sent[2].pendingCount).toBe(2);

    // Nothing changes: one a minute.
    await advance(3 * HEALTH_INTERVAL_MS);
    expect(sent).toHaveLength(6);

    // Another completion is: it goes at once, although work was pending before.
    await advance(5000);
    await complete('noch einer');
    reporter.observe();
    await advance(0);
    expect(sent).toHaveLength(7);
    expect(sent[6]).toMatchObject({ pendingCount: 3, pendingCompletionCount: 2 });

    await advance(5000);
    await outbox.removeAll(outbox.all());
    reporter.observe();
    await advance(0);
    expect(sent).toHaveLength(8);
    expect(sent[7]).toMatchObject({ pendingCount: 0, oldestPending: null, attachmentBytes: 0 });
    void entry;
    reporter.stop();
  });

  it('goes at once on a refusal, and never more than once a second', async () => {
    const { reporter, outbox, sent, complete } = await setUp();
    reporter.start();
    await advance(0);
    const entry = await complete('x');
    reporter.observe();
    await outbox.reject(entry, { code: 'validation', message: 'no' }, Date.now());
    reporter.observe();
    await advance(0);
    expect(sent).toHaveLength(1);
    await advance(1100);
    expect(sent).toHaveLength(2);
    expect(sent[1]).toMatchObject({ pendingCount: 0, rejectedCount: 1 });
    reporter.stop();
  });

  it('carries counts and names, never the content of actions, within the size cap', async () => {
    const { reporter, complete } = await setUp();
    for (let i = 0; i < 80; i++) await complete(`Notiz ${i}: ${'Text '.repeat(50)}`);
    const report = await reporter.report();
    expect(DeviceReport.safeParse(report).success).toBe(true);
    expect(report.pendingCompletionCount).toBe(80);
    expect(report.pendingCompletions).toHaveLength(50);
    expect(report.attachmentBytes).toBe(80 * 1000);
    const text = JSON.stringify(report);
    expect(text).not.toContain('Notiz');
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(DEVICE_REPORT_MAX_BYTES);
  });

  it('keeps its device id in the storage, and makes a new one when another account reports it', async () => {
    let refuse = false;
    const { reporter, store, sent } = await setUp(async () => {
      if (refuse) throw new ProblemError(409, { code: 'conflict', title: 'Conflict' });
    });
    const first = reporter.id;
    expect(await store.get('deviceId')).toBe(first);
    refuse = true;
    reporter.start();
    await advance(0);
    refuse = false;
    await advance(1100);
    expect(sent.map((r) => r.deviceId)).toEqual([first, reporter.id]);
    expect(reporter.id).not.toBe(first);
    expect(await store.get('deviceId')).toBe(reporter.id);
    reporter.stop();
  });

  it('stops sending to a service that knows no reports (404)', async () => {
    const { reporter, sent } = await setUp(async () => {
      throw new ProblemError(404, { code: 'not_found', title: 'Not found' });
    });
    reporter.start();
    await advance(3 * HEALTH_INTERVAL_MS);
    expect(sent).toHaveLength(1);
    expect(await reporter.forPush()).toBeUndefined();
  });
});
