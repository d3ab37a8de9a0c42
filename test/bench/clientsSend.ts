/**
 * What the peers' connectors send: queued actions to Tourline as its interface asks, JSON
 * actions batched into `POST /sync/push`, a photo to `POST /deliveries/{id}/notes/image` and a
 * completion with both signatures to `POST /deliveries/{id}/complete` (multipart), in queue
 * order, each under its own id so that a resend is a duplicate. Also the stable parts every
 * client of the scenario shares: the interface the scenario drives and the durable file write.
 */
import { open, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { DayAction } from './clientsDay.js';

/** An action as a peer's queue holds it: its ids, its time and, for a photo or a completion, its files. */
export interface QueuedAction {
  id: string;
  occurredAt: string;
  action: DayAction;
  /** The note id of a note (fixed when queued). */
  noteId?: string;
  files?: string[];
}

/** One client under test, as the scenario drives it. */
export interface BenchClient {
  /** Resolves once the action is durable in the client's queue. */
  enqueue(action: DayAction): Promise<void>;
  /** The platform says the network is back. */
  online(): void;
  /** Resolves once nothing waits to be sent (each action answered by the service). */
  drained(): Promise<void>;
  close(): Promise<void>;
}

export interface Service {
  baseUrl: string;
  token: string;
  fetch: typeof fetch;
}

/** The service's answer was not taken: the queue keeps the actions for a retry. */
export class RetryLater extends Error {}
/** The service refused an action: retrying cannot help. */
export class Refused extends Error {}

/** Writes a file and syncs it and its directory, as a queue that holds photos must before it says "stored". */
export async function writeDurably(dir: string, name: string, bytes: Uint8Array): Promise<string> {
  const file = path.join(dir, name);
  const handle = await open(file, 'w');
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
  const directory = await open(dir, 'r');
  await directory.sync().finally(() => directory.close());
  return file;
}

function syncEvent({ id, occurredAt, action, noteId }: QueuedAction) {
  switch (action.type) {
    case 'scan':
      return { eventId: id, occurredAt, type: 'scan', deliveryItemId: action.itemId, action: 'scan' };
    case 'note':
      return { eventId: id, occurredAt, type: 'note.create', deliveryId: action.deliveryId, noteId, text: action.text };
    case 'credit':
      return {
        eventId: id,
        occurredAt,
        type: 'credit',
        deliveryId: action.deliveryId,
        action: 'set',
        amountCents: action.amountCents,
        reason: action.reason,
      };
    default:
      throw new Error(`${action.type} is not a push event`);
  }
}

async function answer(response: Response, what: string): Promise<unknown> {
  if (response.ok) return response.json();
  const text = await response.text();
  if (response.status >= 500 || response.status === 408 || response.status === 429)
    throw new RetryLater(`${what}: ${response.status} ${text.slice(0, 200)}`);
  throw new Refused(`${what}: ${response.status} ${text.slice(0, 200)}`);
}

async function push(service: Service, batch: QueuedAction[]) {
  const response = await service.fetch(`${service.baseUrl}/sync/push`, {
    method: 'POST',
    headers: { authorization: `Bearer ${service.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: 'bench-peer', events: batch.map(syncEvent) }),
  });
  const { results } = (await answer(response, 'push')) as { results: { status: string; code?: string }[] };
  const refused = results.filter((r) => r.status === 'rejected' || (r.status === 'duplicate' && r.code));
  if (refused.length > 0) throw new Refused(`push: ${refused.length} refused, first ${refused[0].code}`);
}

const blobOf = async (file: string, type: string) => new Blob([new Uint8Array(await readFile(file))], { type });

async function upload(service: Service, queued: QueuedAction) {
  const { action, files = [] } = queued;
  const form = new FormData();
  let url: string;
  if (action.type === 'photo') {
    url = `${service.baseUrl}/deliveries/${action.deliveryId}/notes/image`;
    form.set('file', await blobOf(files[0], 'image/jpeg'), 'photo.jpg');
    form.set('clientEventId', queued.id);
    form.set('text', action.text);
  } else {
    url = `${service.baseUrl}/deliveries/${action.deliveryId}/complete`;
    form.set('customer_signature', await blobOf(files[0], 'image/png'), 'customer_signature.png');
    form.set('driver_signature', await blobOf(files[1], 'image/png'), 'driver_signature.png');
    form.set('acknowledgements', JSON.stringify({ receiptConfirmed: true, notesAcknowledged: true, clientEventId: queued.id }));
  }
  const response = await service.fetch(url, { method: 'POST', headers: { authorization: `Bearer ${service.token}` }, body: form });
  await answer(response, action.type);
}

/** Sends the actions in order: runs of JSON actions as one push each, a photo or completion on its own. */
export async function sendActions(service: Service, queued: QueuedAction[]): Promise<void> {
  let batch: QueuedAction[] = [];
  for (const entry of queued) {
    if (entry.action.type === 'photo' || entry.action.type === 'complete') {
      if (batch.length > 0) await push(service, batch);
      batch = [];
      await upload(service, entry);
    } else batch.push(entry);
  }
  if (batch.length > 0) await push(service, batch);
}
