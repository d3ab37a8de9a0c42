/**
 * The driver web app of the Chromium test (browser.test.ts): the packaged SDK on IndexedDB,
 * talking to the service through the origin that served the page, fed the browser's own
 * `online`/`offline` events. The test drives it through `globalThis.app`.
 */
import { TourlineClient, type Outcome } from '../../../client-sdk/index.js';
import { attachmentStoreContract, keyValueStoreContract } from '../../../client-sdk/storage/contract.js';
import { IndexedDbAttachmentStore, IndexedDbStore } from '../../../client-sdk/storage/indexedDb.js';

declare const tourlineToken: () => Promise<string>;

let client: TourlineClient | undefined;
const outcomes: Record<string, Outcome['status'] | 'waiting'> = {};
const track = async (queued: Promise<{ eventId: string; outcome: Promise<Outcome> }>) => {
  const { eventId, outcome } = await queued;
  outcomes[eventId] = 'waiting';
  void outcome.then((o) => {
    outcomes[eventId] = o.status;
  });
  return eventId;
};
const the = () => {
  if (!client) throw new Error('not open');
  return client;
};

/** A real JPEG, drawn by the browser. */
async function photo(): Promise<Blob> {
  const canvas = new OffscreenCanvas(64, 48);
  const context = canvas.getContext('2d')!;
  context.fillStyle = '#c33';
  context.fillRect(0, 0, 64, 48);
  return canvas.convertToBlob({ type: 'image/jpeg' });
}

/** What IndexedDB holds: the SDK's keys and the number of waiting attachments. */
async function stored(): Promise<{ databases: string[]; outboxKeys: string[]; attachments: number }> {
  const databases = (await indexedDB.databases()).map((d) => d.name!).sort();
  const outboxKeys = await (await IndexedDbStore.open('tourline')).keys('outbox/');
  const open = indexedDB.open('tourline-attachments');
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(open.error);
  });
  const count = db.transaction('attachments').objectStore('attachments').count();
  const attachments = await new Promise<number>((resolve) => {
    count.onsuccess = () => resolve(count.result);
  });
  db.close();
  return { databases, outboxKeys, attachments };
}

/** The adapter contract on the browser's own IndexedDB: the names of the checks that failed, with why. */
async function contract(): Promise<string[]> {
  const failed: string[] = [];
  let n = 0;
  const run = async <S>(
    checks: { name: string; run: (open: () => Promise<{ store: S; reopen?: () => Promise<S> }>) => Promise<void> }[],
    open: (name: string) => Promise<S>,
  ) => {
    for (const check of checks) {
      const name = `contract-${n++}`;
      await check
        .run(async () => ({ store: await open(name), reopen: () => open(name) }))
        .catch((e: Error) => failed.push(`${check.name}: ${e.message}`));
    }
  };
  await run(keyValueStoreContract, (name) => IndexedDbStore.open(name));
  await run(attachmentStoreContract, (name) => IndexedDbAttachmentStore.open(name));
  return failed;
}

Object.assign(globalThis, {
  app: {
    async open() {
      client = await TourlineClient.open({
        baseUrl: location.origin,
        getToken: () => tourlineToken(),
        webSocket: null,
        requestTimeoutMs: 5000,
        // Long: a send that goes at once after the network returns was started by the `online` event.
        backoff: { baseMs: 30_000, capMs: 30_000 },
        pollIntervalMs: 60_000,
        storage: await IndexedDbStore.open('tourline'),
        attachments: await IndexedDbAttachmentStore.open('tourline'),
        app: { name: 'Fahrer-Web', version: '1.0.0' },
      });
      addEventListener('online', () => client?.online());
      addEventListener('offline', () => client?.offline());
      return client.status();
    },
    loadTours: (date: string) => the().loadTours({ date }),
    start: () => the().start({ live: false }),
    scan: (itemId: string) => track(the().scan(itemId)),
    hold: (deliveryId: string, reason: string) => track(the().holdDelivery(deliveryId, reason)),
    photo: async (deliveryId: string, text: string) =>
      track(the().createImageNote(deliveryId, { image: await photo(), contentType: 'image/jpeg', text })),
    status: () => the().status(),
    view: (deliveryId: string) => the().delivery(deliveryId),
    settled: (ms: number) => the().settled(ms),
    outcomes: () => outcomes,
    stored,
    contract,
    /** The device id the health report carries, as IndexedDB keeps it. */
    deviceId: async () => JSON.parse((await (await IndexedDbStore.open('tourline')).get('deviceId')) ?? 'null'),
  },
});
