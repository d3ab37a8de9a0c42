import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { RefusalError, type CheckedAction, type TourlineClient } from '../../client-sdk/index.js';
import { databaseKinds } from '../helpers/databases.js';
import { useTestServer } from '../helpers/server.js';
import { FaultInjector } from './faults.js';
import { openClient, sdkOptions } from './service.js';
import { seedCase, seedMaster, verdictCases, type Master } from './verdictCases.js';

const png = new Uint8Array(
  await sharp({ create: { width: 40, height: 20, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 1 } } })
    .png()
    .toBuffer(),
);

/** The action through its helper's path: an event as `enqueue` takes it, a completion with its signatures. */
function perform(client: TourlineClient, action: CheckedAction) {
  if (action.type !== 'delivery.complete') return client.enqueue(action);
  const { deliveryId, acknowledgements, customerSignature, driverSignature } = action;
  return client.complete(deliveryId, {
    customerSignature: customerSignature ?? png,
    driverSignature: driverSignature ?? png,
    acknowledgements,
  });
}

/** What a refusal says, as the app reads it; a completion's problem+json has no `reason`. */
const said = (r: { code: string; message: string; errors?: unknown }) => ({ code: r.code, message: r.message, errors: r.errors ?? [] });
const requestsOf = (faults: FaultInjector) => faults.log.filter((l) => l.method !== 'GET').map((l) => l.path);

describe.each(databaseKinds)('the device refuses what the service refuses, with its code, on %s', { timeout: 60_000 }, (kind) => {
  const server = useTestServer(kind);
  let master: Master;
  beforeAll(async () => {
    master = await seedMaster(server);
  });

  async function deviceOf(pnr: number, date: string, extra = {}) {
    const faults = new FaultInjector(server.url);
    const client = await openClient(sdkOptions(() => server, pnr, faults, extra));
    await client.loadTours({ date });
    await client.loadMasterData();
    return { client, faults };
  }

  const refused = verdictCases.filter((c) => c.refused);
  const accepted = verdictCases.filter((c) => !c.refused);

  it.each(refused.map((c) => [c.rule, c] as const))(
    '%s: refused offline at once, nothing queued, and the service says the same',
    async (_rule, c) => {
      const { pnr, date, ids } = await seedCase(server, master, c.given);
      const action = c.action(ids);

      const device = await deviceOf(pnr, date);
      device.client.offline();
      device.faults.offline = true;
      const verdict = device.client.check(action);
      expect(verdict).toMatchObject(c.refused!);
      const started = performance.now();
      const error = await perform(device.client, action).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(performance.now() - started).toBeLessThan(250);
      expect(error).toBeInstanceOf(RefusalError);
      expect(error).toMatchObject({ ...verdict, name: 'RefusalError' });
      expect(device.client.outbox.all()).toEqual([]);
      device.client.online();
      device.faults.offline = false;
      await device.client.sync();
      expect(requestsOf(device.faults)).toEqual([]);

      // Without the device's verdict, the service refuses it with the same code, message and fields.
      const bypass = await deviceOf(pnr, date, { checkLocally: false });
      await perform(bypass.client, action);
      await bypass.client.sync();
      const [rejection] = bypass.client.rejected();
      // Also a refused scan names its delivery, so the app shows it on its stop.
      expect(rejection).toMatchObject({ deliveryId: ids.delivery });
      expect(said(rejection)).toEqual(said(verdict!));
      if (rejection.reason !== undefined) expect(rejection.reason).toBe(verdict!.reason);
    },
  );

  it.each(accepted.map((c) => [c.rule, c] as const))('%s: passes on the device and the service takes it', async (_rule, c) => {
    const { pnr, date, ids } = await seedCase(server, master, c.given);
    const action = c.action(ids);
    const device = await deviceOf(pnr, date);
    expect(device.client.check(action)).toBeNull();
    await perform(device.client, action);
    await device.client.sync();
    expect(device.client.rejected()).toEqual([]);
    expect(device.client.status().pendingCount).toBe(0);
  });

  it("refuses offline, at once, a 15 € credit, a hold without a reason and a completion with an open line, with the service's codes, leaving the outbox as it was", async () => {
    const { pnr, date, ids } = await seedCase(server, master);
    const device = await deviceOf(pnr, date);
    // Line 0 still has a piece to scan; something else already waits in the outbox.
    await device.client.createNote(ids.delivery, { text: 'Hintereingang' });
    device.client.offline();
    const before = device.client.outbox.all();
    expect(before).toHaveLength(1);
    const calls = {
      setCredit: () => device.client.setCredit(ids.delivery, { amountCents: 1500, reason: 'Bruch' }),
      holdDelivery: () => device.client.holdDelivery(ids.delivery, '   '),
      complete: () =>
        device.client.complete(ids.delivery, {
          customerSignature: png,
          driverSignature: png,
          acknowledgements: { receiptConfirmed: true },
        }),
    };
    const answers: Record<string, { code: string; reason: string; ms: number }> = {};
    for (const [name, call] of Object.entries(calls)) {
      const started = performance.now();
      const error = (await call().then(
        () => undefined,
        (e: unknown) => e,
      )) as RefusalError;
      answers[name] = { code: error.code, reason: error.reason, ms: Math.round((performance.now() - started) * 10) / 10 };
      expect(error).toBeInstanceOf(RefusalError);
      expect(answers[name].ms).toBeLessThan(250);
    }
    expect(Object.fromEntries(Object.entries(answers).map(([name, a]) => [name, [a.code, a.reason]]))).toEqual({
      setCredit: ['validation', 'invalid_credit'],
      holdDelivery: ['validation', 'validation'],
      complete: ['validation', 'open_scans'],
    });
    expect(device.client.outbox.all()).toEqual(before);
    expect(requestsOf(device.faults)).toEqual([]);
    console.info(
      `refused offline in ${Object.entries(answers)
        .map(([name, a]) => `${name} ${a.ms} ms`)
        .join(', ')}`,
    );
  });
});
