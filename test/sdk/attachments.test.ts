import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TourlineClient } from '../../client-sdk/index.js';
import { DEFAULT_KEEP_ACKNOWLEDGED } from '../../client-sdk/acknowledged.js';
import { FileAttachmentStore, FileStore } from '../../client-sdk/node.js';
import { retainedBytes } from '../helpers/memory.js';
import { fakeService, newTour } from './fakes.js';

const dirs: string[] = [];
afterEach(async () => {
  while (dirs.length) await rm(dirs.pop()!, { recursive: true, force: true });
});
async function tempDir() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tourline-attachments-'));
  dirs.push(dir);
  return dir;
}
const mtimes = async (dir: string) =>
  Object.fromEntries(await Promise.all((await readdir(dir)).map(async (n) => [n, (await stat(path.join(dir, n))).mtimeMs])));

describe('photos by reference', () => {
  it('keeps 200 waiting photos of 2 MB out of memory, never rewrites one on a retry, and once sent keeps only what fits the window', async () => {
    const [storeDir, attachmentDir] = [await tempDir(), await tempDir()];
    let online = false;
    const service = fakeService({ intercept: () => (online ? undefined : 'network') });
    const client = await TourlineClient.open({
      baseUrl: 'http://tourline.test',
      getToken: () => 'token',
      fetch: service.fetch,
      webSocket: null,
      storage: await FileStore.open(storeDir),
      attachments: await FileAttachmentStore.open(attachmentDir),
    });
    const tour = newTour({ deliveries: 1 });
    await client.state.putTour(tour);
    const delivery = tour.deliveries[0].id;

    const before = retainedBytes();
    for (let i = 0; i < 200; i++) {
      const photo = new Uint8Array(2 * 2 ** 20).fill(i);
      await client.createImageNote(delivery, { image: photo, text: `Foto ${i}` });
    }
    const growth = retainedBytes() - before;
    expect(client.status().pendingCount).toBe(200);
    expect(growth).toBeLessThan(40 * 2 ** 20);
    // The outbox entries hold references: a few hundred bytes each, not megabytes.
    const entrySizes = await Promise.all(
      (await readdir(storeDir)).filter((n) => n.startsWith('outbox')).map(async (n) => (await stat(path.join(storeDir, n))).size),
    );
    expect(Math.max(...entrySizes)).toBeLessThan(2000);

    const photosBefore = await mtimes(attachmentDir);
    const entriesBefore = await mtimes(storeDir);
    await expect(client.sync()).rejects.toThrow();
    await expect(client.sync()).rejects.toThrow();
    expect(await mtimes(attachmentDir)).toEqual(photosBefore);
    expect(await mtimes(storeDir)).toEqual(entriesBefore);

    online = true;
    const offlineCalls = service.calls.length;
    await client.sync();
    expect(client.status()).toMatchObject({ pendingCount: 0, rejected: [] });
    expect(service.calls.slice(offlineCalls).filter((c) => c.path.endsWith('/notes/image'))).toHaveLength(200);
    // The newest of the sent photos stay for the window of acknowledged actions, within its bytes.
    const kept = await readdir(attachmentDir);
    const keptBytes = (await Promise.all(kept.map(async (n) => (await stat(path.join(attachmentDir, n))).size))).reduce((a, b) => a + b, 0);
    expect(keptBytes).toBeLessThanOrEqual(DEFAULT_KEEP_ACKNOWLEDGED.maxBytes);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(200);
    await client.close();
  }, 240_000);
});
