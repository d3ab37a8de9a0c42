import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { importRetryDelayMs } from '../../server/jobs/scheduler.js';

describe('retries of a failed ERP import', () => {
  const { importRetryFirstMs, importRetryMaxMs } = loadConfig({}).erp;

  it('tries again within 30 s by default, then doubling, never more than 5 minutes apart', () => {
    const delays = Array.from({ length: 12 }, (_, i) => importRetryDelayMs(i + 1, importRetryFirstMs, importRetryMaxMs));
    expect(delays[0]).toBeLessThanOrEqual(30_000);
    expect(delays[1]).toBe(2 * delays[0]);
    expect(Math.max(...delays)).toBe(300_000);
  });

  it.each([
    ['ERP_IMPORT_RETRY_FIRST_MS', '30001'],
    ['ERP_IMPORT_RETRY_MAX_MS', '300001'],
    ['ERP_IMPORT_RETRY_FIRST_MS', '0'],
  ])('refuses %s=%s', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });
});
