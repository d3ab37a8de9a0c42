/**
 * The client SDK's own costs, without a database: a fake transport answers at once, so the
 * figures are the SDK's (storage writes, copies, bookkeeping) and the durable file store's.
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { TourlineClient } from '../../client-sdk/index.js';
import { FileAttachmentStore, FileStore } from '../../client-sdk/node.js';
import { fakeService, newTour } from '../sdk/fakes.js';
import { retainedBytes } from '../helpers/memory.js';
import { round } from './stats.js';

export interface SdkSizes {
  actions: number;
  photos: number;
  photoBytes: number;
  pushEvents: number;
}
export const fullSdkSizes: SdkSizes = { actions: 500, photos: 200, photoBytes: 2 * 2 ** 20, pushEvents: 500 };
export const tinySdkSizes: SdkSizes = { actions: 20, photos: 5, photoBytes: 64 * 2 ** 10, pushEvents: 20 };

async function directorySize(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    total += entry.isDirectory() ? await directorySize(full) : (await stat(full)).size;
  }
  return total;
}

/** A client over a fresh file store, photos in files beside it, holding one tour, that sends nothing until told. */
async function client(dirs: string[], fetch = fakeService().fetch, deliveries = 2) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tourline-bench-sdk-'));
  dirs.push(dir);
  const storage = await FileStore.open(path.join(dir, 'kv'));
  const attachments = await FileAttachmentStore.open(path.join(dir, 'attachments'));
  const sdk = await TourlineClient.open({
    baseUrl: 'http://tourline.test',
    getToken: () => 'token',
    fetch,
    webSocket: null,
    storage,
    attachments,
    // The scans go past their lines' quantities: measured is the outbox, not the verdicts.
    checkLocally: false,
  });
  const tour = newTour({ deliveries, positions: 4 });
  await sdk.state.putTour(tour);
  return { sdk, tour, dir };
}

export async function sdkScenario(sizes: SdkSizes): Promise<Record<string, number>> {
  const dirs: string[] = [];
  try {
    // Enqueue: scans on a durable file store, one after another as a driver taps.
    const { sdk, tour, dir } = await client(dirs);
    const before = await directorySize(dir);
    const items = tour.deliveries.flatMap((d) => d.positions.map((p) => p.id));
    const started = performance.now();
    for (let i = 0; i < sizes.actions; i++) await sdk.scan(items[i % items.length]);
    const enqueueUs = ((performance.now() - started) * 1000) / sizes.actions;
    const storedBytes = ((await directorySize(dir)) - before) / sizes.actions;
    await sdk.close();

    // Heap while photos wait: the app hands over each photo and lets go of it.
    const photos = await client(dirs);
    const heapBefore = retainedBytes();
    for (let i = 0; i < sizes.photos; i++) {
      const image = new Uint8Array(sizes.photoBytes);
      image[0] = i % 256;
      await photos.sdk.createImageNote(photos.tour.deliveries[0].id, { image });
    }
    const heapGrowth = retainedBytes() - heapBefore;
    await photos.sdk.close();

    // Settling a push answer: the events wait, then one sync pushes them and records the answer.
    const service = fakeService();
    const pushing = await client(dirs, service.fetch, Math.ceil(sizes.pushEvents / 4));
    const lines = pushing.tour.deliveries.flatMap((d) => d.positions.map((p) => p.id));
    for (let i = 0; i < sizes.pushEvents; i++) await pushing.sdk.scan(lines[i % lines.length]);
    const settleStarted = performance.now();
    await pushing.sdk.sync();
    const settleMs = performance.now() - settleStarted;
    if (pushing.sdk.status().pendingCount !== 0 || service.pushes().length !== 1)
      throw new Error('the push answer was not settled in one push');
    await pushing.sdk.close();

    return {
      enqueue_us: round(enqueueUs, 0),
      stored_bytes_per_action: round(storedBytes, 0),
      photos_heap_mb: round(heapGrowth / 2 ** 20, 1),
      photos_bytes_mb: round((sizes.photos * sizes.photoBytes) / 2 ** 20, 0),
      settle_push_ms: round(settleMs, 1),
    };
  } finally {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  }
}
