import { describe, expect, it } from 'vitest';
import { tinyUpgradeSizes, upgrade } from '../bench/upgrade.js';
import { createPostgresDatabase } from '../helpers/databases.js';

// The upgrade scenario at a tiny size: the previous release serves, this one migrates, starts and
// takes over; what it checks must hold, its timings mean nothing here.
describe('a rolling upgrade from the previous release on postgres', () => {
  it('fails no request but 503 with Retry-After, loses and doubles no event, and the sockets come back', async () => {
    const results = await upgrade(await createPostgresDatabase(), tinyUpgradeSizes, () => undefined);
    expect(results).toMatchObject({ failed_requests: 0, events_lost: 0, events_doubled: 0 });
    expect(results.events).toBeGreaterThan(tinyUpgradeSizes.drivers);
    expect(results.old_writes_during_migration).toBeGreaterThan(0);
    expect(results.reconnects).toBeGreaterThanOrEqual(tinyUpgradeSizes.drivers);
  }, 120_000);
});
