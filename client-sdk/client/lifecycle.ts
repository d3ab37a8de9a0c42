import { AcknowledgedActions } from '../acknowledged.js';
import { KeyValueAttachmentStore } from '../attachments.js';
import { Outbox } from '../outbox.js';
import { LocalState } from '../state.js';
import { JsonStore, MemoryStore, type KeyValueStore } from '../storage/keyValue.js';
import { Actions } from './actions.js';
import { ClientCore, defaultRandomId, type TourlineClientOptions } from './core.js';
import { Feed } from './feed.js';
import { Reads } from './reads.js';
import { sendAcknowledgedAgain } from './restore.js';
import { Sender } from './sender.js';
import { Status } from './status.js';
import { detectTabs } from '../tabs.js';
import { Tabs } from './tabs.js';
import { HealthReporter } from '../health.js';
import { requeueRefusedAsTooOld } from './upgrade.js';

const CLIENT_ID_KEY = 'clientId';

/** The parts of a client, wired together; the facade hands its calls to them. */
export interface Parts {
  core: ClientCore;
  feed: Feed;
  status: Status;
  sender: Sender;
  reads: Reads;
  actions: Actions;
  tabs?: Tabs;
}

/** Loads the outbox, the local tours and the cursor from storage, and wires the parts. */
export async function openParts(options: TourlineClientOptions): Promise<Parts> {
  const kv: KeyValueStore = options.storage ?? new MemoryStore();
  const store = new JsonStore(kv);
  const outbox = await Outbox.load(store);
  await requeueRefusedAsTooOld(outbox);
  const state = await LocalState.load(store);
  let clientId = await store.get<string>(CLIENT_ID_KEY);
  if (!clientId) {
    clientId = (options.randomId ?? defaultRandomId)();
    await store.set(CLIENT_ID_KEY, clientId);
  }
  await outbox.settle({ lastSeq: state.lastSeq });
  const attachments = options.attachments ?? new KeyValueAttachmentStore(kv);
  const kept = await AcknowledgedActions.load(store, attachments, options.keepAcknowledged, options.now ?? Date.now);
  outbox.keepAcknowledged(kept);
  await kept.prune();
  const core = new ClientCore(options, store, outbox, state, clientId, attachments, kept);
  const feed = new Feed(core);
  const status = new Status(core, feed.live);
  feed.status = status;
  const sender = new Sender(core, feed, status);
  status.onAnswered = () => sender.serviceReached();
  feed.sendAgain = (refusal) => sendAcknowledgedAgain(core, sender, refusal);
  const reads = new Reads(core, feed);
  const actions = new Actions(core, reads, () => sender.scheduleFlush());
  // Storage other tabs open too: only one of them sends at a time.
  const coordinator =
    options.tabs === undefined ? (kv.shared === undefined ? undefined : detectTabs(kv.shared)) : (options.tabs ?? undefined);
  const tabs = coordinator && new Tabs(core, sender, status, coordinator);
  if (options.healthReports !== false) {
    const { store: jsonStore, attachments, now, randomId, random } = core;
    core.health = new HealthReporter({
      store: jsonStore,
      outbox,
      attachments,
      now,
      randomId,
      random,
      deliveryOfAction: (action) => core.deliveryOfAction(action),
      app: options.app,
      platform: options.platform,
      sync: () => ({ lastPushAt: status.lastPushAt, lastPullAt: status.lastPullAt, lastErrorCode: status.lastError?.code ?? null }),
      sendOnSocket: (report) => feed.live.send({ type: 'device', report }),
      post: (report) => core.api.reportDevice(report),
      maySend: () => sender.started && sender.leading && !sender.offline && !status.needsSignIn,
    });
    await core.health.load();
    core.events.on('status', () => core.health?.observe());
  }
  return { core, feed, status, sender, reads, actions, tabs };
}

/** Starting, stopping and closing: what runs in the background. */
export class Lifecycle {
  private closed = false;

  constructor(private readonly parts: Parts) {}

  start(options: { live?: boolean } = {}) {
    const { sender, feed } = this.parts;
    if (sender.started || this.closed) return;
    sender.started = true;
    this.parts.tabs?.lead();
    feed.liveWanted = options.live ?? true;
    if (feed.liveWanted && !sender.offline) feed.live.start();
    sender.scheduleFlush();
    this.parts.core.health?.start();
  }

  stop() {
    this.parts.tabs?.resign();
    this.parts.sender.stop();
    this.parts.core.health?.stop();
    this.parts.feed.liveWanted = false;
    this.parts.feed.live.stop();
  }

  /** Stops, waits for running work, and closes the storage. */
  async close() {
    this.stop();
    this.closed = true;
    await this.parts.actions.idle();
    await this.parts.sender.serial.idle();
    await this.parts.feed.serial.idle();
    this.parts.tabs?.close();
    await this.parts.core.store.kv.close?.();
  }
}
