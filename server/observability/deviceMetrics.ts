import { Gauge, type Registry } from 'prom-client';
import type { Db } from '../db/client.js';
import { deviceGauges, type DeviceGauges } from '../queries/adminDevices.js';

type Guard = (collect: (this: Gauge) => Promise<void> | void) => (this: Gauge) => Promise<void>;

/**
 * The devices' gauges, from their latest reports (all instances: aggregate with max). One read
 * serves the four gauges of a scrape.
 */
export function deviceMetrics(registry: Registry, db: Db, guarded: Guard) {
  const registers = [registry];
  let read: { at: number; gauges: Promise<DeviceGauges> } | undefined;
  const current = () => {
    if (!read || Date.now() - read.at > 1000) read = { at: Date.now(), gauges: deviceGauges(db) };
    const { gauges } = read;
    gauges.catch(() => (read = undefined));
    return gauges;
  };
  new Gauge({
    name: 'tourline_devices',
    help: 'Devices with a kept health report, by SDK version; all instances',
    labelNames: ['sdk_version'],
    registers,
    collect: guarded(async function (this: Gauge) {
      const { bySdkVersion } = await current();
      this.reset();
      for (const { sdkVersion, count } of bySdkVersion) this.set({ sdk_version: sdkVersion }, count);
    }),
  });
  new Gauge({
    name: 'tourline_devices_pending_over_15m',
    help: 'Devices whose oldest unsent action has waited longer than 15 minutes, by their latest report; all instances',
    registers,
    collect: guarded(async function (this: Gauge) {
      this.set((await current()).pendingOver15Minutes);
    }),
  });
  new Gauge({
    name: 'tourline_device_pending_completions',
    help: 'Completions held unsent on devices, by their latest reports; all instances',
    registers,
    collect: guarded(async function (this: Gauge) {
      this.set((await current()).pendingCompletions);
    }),
  });
  new Gauge({
    name: 'tourline_device_oldest_pending_age_seconds',
    help: 'How long the oldest unsent action on any device has waited (0 when none waits); all instances',
    registers,
    collect: guarded(async function (this: Gauge) {
      this.set((await current()).oldestPendingSeconds);
    }),
  });
}
