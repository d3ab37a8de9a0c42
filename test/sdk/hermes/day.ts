/**
 * A driver's offline day, bundled for a bare Hermes VM (see hermes.test.ts). The prelude gives
 * only what React Native itself adds to Hermes (console, FormData with `append`, a timer and
 * `navigator.product`); everything else the SDK needs must come from the engine or from the SDK.
 */
import { MemoryStore, TourlineClient, type AttachmentStore, type FileData } from '../../../client-sdk/index.js';
import { newTour } from '../fakes.js';

interface Sent {
  method: string;
  path: string;
  body: unknown;
}
const sent: Sent[] = [];
let online = false;
const seen = new Set<string>();

/** A Response as far as the SDK reads one; React Native's fetch answers the same surface. */
const answer = (status: number, body: unknown) => ({
  ok: status < 400,
  status,
  headers: {
    get: (name: string) =>
      name.toLowerCase() === 'content-type' ? (status < 400 ? 'application/json' : 'application/problem+json') : null,
  },
  text: async () => JSON.stringify(body),
  arrayBuffer: async () => new ArrayBuffer(0),
});

async function fetch(url: string, init: { method?: string; body?: unknown }) {
  if (!online) throw new TypeError('Network request failed');
  const path = url.replace('http://tourline.test', '').replace(/\?.*$/, '');
  const body = typeof init.body === 'string' ? JSON.parse(init.body) : init.body;
  sent.push({ method: init.method ?? 'GET', path, body });
  if (path === '/sync/push') {
    const events = (body as { events: { eventId: string }[] }).events;
    return answer(200, {
      device: { status: 'stored' },
      results: events.map((e) => ({ eventId: e.eventId, status: seen.has(e.eventId) ? 'duplicate' : (seen.add(e.eventId), 'applied') })),
    });
  }
  if (path === '/sync/changes') return answer(200, { changes: [], cursor: 'c1', hasMore: false });
  const parts = (body as { parts?: [string, unknown][] })?.parts ?? [];
  const field = (name: string) => parts.find(([n]) => n === name)?.[1];
  if (path.endsWith('/complete')) return answer(200, { delivery: { id: path.split('/')[2], state: 'completed' } });
  if (path.endsWith('/notes/image'))
    return answer(201, { note: { id: field('noteId'), imageAttachment: '~photo', text: field('text') ?? null } });
  return answer(404, { title: 'Not found', status: 404, code: 'not_found' });
}

/** The app's attachment store, as the expo-file-system adapter of the README: files by URI. */
const files = new Map<string, string>();
const attachments: AttachmentStore = {
  async put(id: string, data: FileData) {
    files.set(id, (data as { uri: string }).uri);
  },
  async get(id: string) {
    const uri = files.get(id);
    return uri === undefined ? undefined : { uri };
  },
  async delete(id: string) {
    files.delete(id);
  },
};

// What react-native-get-random-values adds to Hermes; the SDK makes its time-ordered ids from it.
(globalThis as { crypto?: unknown }).crypto = {
  getRandomValues: (bytes: Uint8Array) => bytes.map(() => Math.floor(Math.random() * 256)),
};

async function day() {
  const client = await TourlineClient.open({
    baseUrl: 'http://tourline.test',
    getToken: () => 'token',
    fetch: fetch as never,
    webSocket: null,
    storage: new MemoryStore(),
    attachments,
    requestTimeoutMs: 5000,
  });
  const tour = newTour({ deliveries: 2, positions: 2 });
  await client.state.putTour(tour);
  const [first, second] = tour.deliveries;
  // In a dead zone: everything is queued and shown at once.
  await client.scan(first.positions[0].id);
  await client.scan(first.positions[0].id);
  await client.scan(first.positions[1].id);
  await client.scan(first.positions[1].id);
  await client.createImageNote(first.id, { image: { uri: 'file:///dcim/IMG_0001.jpg' }, text: 'Karton beschädigt' });
  await client.complete(first.id, {
    customerSignature: { uri: 'file:///sig/customer.png' },
    driverSignature: { uri: 'file:///sig/driver.png' },
    acknowledgements: { receiptConfirmed: true, notesAcknowledged: true },
  });
  await client.holdDelivery(second.id, 'Kunde nicht angetroffen');
  let offlineError = '';
  try {
    await client.sync();
  } catch (error) {
    offlineError = String((error as Error).message);
  }
  const offline = client.status();
  const viewed = client.view(tour.tour.id)!;
  // Back in coverage.
  online = true;
  await client.sync();
  const done = client.status();
  await client.close();
  return {
    offlineError,
    offlinePending: offline.pendingCount,
    offlineOnline: offline.online,
    viewed: {
      first: viewed.deliveries[0].state,
      second: viewed.deliveries[1].state,
      scanned: viewed.deliveries[0].positions.map((p) => p.scannedQuantity),
      notes: viewed.deliveries[0].notes.length,
    },
    pending: done.pendingCount,
    rejected: done.rejected.length,
    online: done.online,
    filesLeft: files.size,
    report: (sent.find((s) => s.path === '/sync/push' && (s.body as { device?: unknown }).device)?.body as { device?: unknown })?.device,
    calls: sent.map((s) => `${s.method} ${s.path}`),
    pushed: sent
      .filter((s) => s.path === '/sync/push')
      .flatMap((s) => (s.body as { events: { type: string }[] }).events.map((e) => e.type)),
    eventIds: sent
      .filter((s) => s.path === '/sync/push')
      .flatMap((s) => (s.body as { events: { eventId: string }[] }).events.map((e) => e.eventId)),
    parts: sent.filter((s) => s.method === 'POST' && s.path !== '/sync/push').map((s) => (s.body as { parts: unknown[] }).parts),
  };
}

day().then(
  (result) => console.log(`RESULT ${JSON.stringify(result)}`),
  (error) => console.log(`FAILED ${error instanceof Error ? `${error.message}\n${error.stack}` : String(error)}`),
);
