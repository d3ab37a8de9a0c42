import fs from 'node:fs';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { processMetrics } from '../../server/observability/processMetrics.js';
import { sample } from '../helpers/prometheus.js';

describe('process metrics', () => {
  afterEach(() => vi.restoreAllMocks());

  const scrape = () => {
    const registry = new Registry();
    processMetrics(registry);
    return registry.metrics();
  };

  it("keep prom-client's defaults but those that walk every handle", async () => {
    const text = await scrape();
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'process_max_fds',
      'nodejs_eventloop_lag_p99_seconds',
    ]) {
      expect(text).toMatch(new RegExp(`^# TYPE ${name} `, 'm'));
    }
    for (const name of [
      'nodejs_active_handles',
      'nodejs_active_handles_total',
      'nodejs_active_resources',
      'nodejs_active_resources_total',
    ]) {
      expect(text).not.toMatch(new RegExp(`^# TYPE ${name} `, 'm'));
    }
  });

  it.runIf(process.platform === 'linux')('count the open file descriptors without blocking the event loop on the listing', async () => {
    const walks = [vi.spyOn(fs, 'readdirSync'), vi.spyOn(process as unknown as { _getActiveHandles(): unknown[] }, '_getActiveHandles')];
    const before = sample(await scrape(), 'process_open_fds')!;
    const opened = Array.from({ length: 40 }, () => fs.openSync('/dev/null', 'r'));
    try {
      const after = sample(await scrape(), 'process_open_fds')!;
      // Other work of the test runner may open or close a descriptor meanwhile.
      expect(after - before).toBeGreaterThanOrEqual(38);
      expect(after - before).toBeLessThanOrEqual(42);
    } finally {
      for (const fd of opened) fs.closeSync(fd);
    }
    for (const walk of walks) expect(walk).not.toHaveBeenCalled();
  });
});
