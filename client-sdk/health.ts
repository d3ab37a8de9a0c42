import { DEVICE_REPORT_MAX_COMPLETIONS, type DeviceReport, type DeviceReportAnswer } from '../shared/schemas/devices.js';
import type { AttachmentStore } from './attachments.js';
import { attachmentsOf, type Outbox } from './outbox.js';
import { ProblemError } from './problem.js';
import type { JsonStore } from './storage/keyValue.js';
import { clearTimer } from './timers.js';
import type { ClientCore } from './client/core.js';
import { toRejected } from './client/status.js';
import { SDK_VERSION } from './version.js';

const DEVICE_ID_KEY = 'deviceId';
/** While nothing changes, a report goes this often (it tells the office the phone is still there). */
export const HEALTH_INTERVAL_MS = 60_000;
/** The service takes one report per device a second; the SDK keeps a little above that. */
const MIN_GAP_MS = 1100;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** What the reporter reads of the rest of the client. */
export interface HealthSources {
  store: JsonStore;
  outbox: Outbox;
  attachments: AttachmentStore;
  now: () => number;
  randomId: () => string;
  random: () => number;
  /** The delivery an action belongs to (a scan's through its line), as far as the local copy knows. */
  deliveryOfAction: ClientCore['deliveryOfAction'];
  app?: { name?: string; version?: string };
  platform?: string;
  /** The last push and pull the service answered, and the code of the last error. */
  sync: () => { lastPushAt: number | null; lastPullAt: number | null; lastErrorCode: string | null };
  /** Sends a report on the live socket when it is open; false when it is not (the answer comes to `answered`). */
  sendOnSocket: (report: DeviceReport) => boolean;
  /** Sends a report as its own small request (`POST /sync/device`). */
  post: (report: DeviceReport) => Promise<void>;
  /** Whether this client may send now (started, leading its tabs, online, signed in). */
  maySend: () => boolean;
}

function detectPlatform(): string {
  const g = globalThis as { navigator?: { product?: string }; HermesInternal?: unknown; process?: { versions?: { node?: string } } };
  if (g.navigator?.product === 'ReactNative') return 'react-native';
  if (g.HermesInternal !== undefined) return 'hermes';
  if (g.process?.versions?.node) return 'node';
  if (typeof (globalThis as { document?: unknown }).document === 'object') return 'web';
  return 'unknown';
}

const label = (value: string | undefined, max: number) => (value?.trim() ? value.trim().slice(0, max) : null);

/** A UUID from `randomId`, or made from `random` when the app's ids are of another form. */
function newDeviceId(randomId: () => string, random: () => number): string {
  const id = randomId().toLowerCase();
  if (UUID.test(id)) return id;
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${'89ab'[Math.floor(random() * 4)]}${hex.slice(17, 20)}-${hex.slice(20)}`;
}

/**
 * The device's sync health, reported to the service: with pushes, on the live socket, or as a
 * small request of its own (where a photo upload fails, it still passes). At once when something
 * important changes (the first pending action after an empty outbox, a completion queued, a
 * refusal, the outbox emptied), otherwise at most once a minute. A report counts and names actions, never their content.
 */
export class HealthReporter {
  private deviceId = '';
  /** When the service last answered a report: it takes one a second per device. */
  private lastSentAt = -Infinity;
  private observed = { pending: 0, rejected: 0, completions: 0 };
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Infinity;
  private sending = false;
  /** A report fell due while one was on its way: it goes right after. */
  private dueAgain = false;
  /** The last report did not reach the service: the next change of the status tries again. */
  private undelivered = false;
  private running = false;
  /** Undefined until the service first answers a report; false once it said it knows no reports (an older service). */
  private supported: boolean | undefined;
  private readonly attachmentBytes = new Map<string, number>();
  private readonly platform: string;

  constructor(private readonly sources: HealthSources) {
    this.platform = label(sources.platform, 40) ?? detectPlatform();
  }

  /** Reads the device id from storage, making it on first use. */
  async load() {
    const stored = await this.sources.store.get<string>(DEVICE_ID_KEY);
    this.deviceId = typeof stored === 'string' && UUID.test(stored) ? stored : await this.renewId();
    this.observed = this.counts();
  }

  private counts() {
    const pending = this.sources.outbox.pending();
    const completions = pending.filter((e) => e.action.kind === 'completion').length;
    return { pending: pending.length, rejected: this.sources.outbox.rejected().length, completions };
  }

  get id() {
    return this.deviceId;
  }

  start() {
    this.running = true;
    this.schedule(0);
  }

  stop() {
    this.running = false;
    this.timer = clearTimer(this.timer);
    this.timerAt = Infinity;
  }

  /** The status changed: an important change sends at once, any other waits for the next report. */
  observe() {
    const before = this.observed;
    this.observed = this.counts();
    const { pending, rejected, completions } = this.observed;
    // A completion held on the phone is what the office looks for: each new one is news, not only the first pending action.
    const important =
      (before.pending === 0 && pending > 0) ||
      (before.pending > 0 && pending === 0) ||
      rejected > before.rejected ||
      completions > before.completions;
    if (important || this.undelivered) this.schedule(0);
  }

  /**
   * A report for the push about to go when one is due (an important change, or a minute since the
   * last): the push carries it instead of a request of its own. Most pushes carry none.
   */
  async forPush(): Promise<DeviceReport | undefined> {
    const now = this.sources.now();
    if (this.supported === false || now - this.lastSentAt < MIN_GAP_MS) return undefined;
    const due = this.timer === undefined ? now - this.lastSentAt >= HEALTH_INTERVAL_MS : this.timerAt <= now + MIN_GAP_MS;
    if (!due) return undefined;
    this.timer = clearTimer(this.timer);
    this.timerAt = Infinity;
    this.undelivered = true;
    this.schedule(HEALTH_INTERVAL_MS);
    return this.report();
  }

  /** The service's answer to a report (of a push, the socket or its own request). */
  answered(answer: DeviceReportAnswer | undefined) {
    if (!answer) return;
    this.undelivered = false;
    this.lastSentAt = this.sources.now();
    if (answer.status === 'stored') {
      this.supported = true;
      return;
    }
    if (answer.code === 'rate_limited' || answer.code === 'internal') this.schedule(MIN_GAP_MS);
    if (answer.code === 'conflict') void this.renewId().then(() => this.schedule(0));
  }

  /** The report as it stands now. */
  async report(): Promise<DeviceReport> {
    const { outbox, now, app } = this.sources;
    const pending = outbox.pending();
    const oldest = pending.reduce<(typeof pending)[number] | undefined>((a, e) => (!a || e.createdAt < a.createdAt ? e : a), undefined);
    const completions = pending.flatMap((e) => (e.action.kind === 'completion' ? [e.action] : []));
    const oldestAction = oldest && toRejected(oldest, this.sources);
    const sync = this.sources.sync();
    const iso = (at: number | null) => (at === null ? null : new Date(at).toISOString());
    return {
      deviceId: this.deviceId,
      sdkVersion: SDK_VERSION,
      appName: label(app?.name, 100),
      appVersion: label(app?.version, 40),
      platform: this.platform,
      pendingCount: pending.length,
      oldestPending: oldest
        ? { ageMs: Math.max(0, Math.round(now() - oldest.createdAt)), type: oldestAction!.type, deliveryId: oldestAction!.deliveryId }
        : null,
      pendingCompletionCount: completions.length,
      pendingCompletions: completions
        .slice(0, DEVICE_REPORT_MAX_COMPLETIONS)
        .map((c) => ({ deliveryId: c.deliveryId, completedAt: new Date(c.occurredAt).toISOString() })),
      rejectedCount: outbox.rejected().length,
      outboxBytes: outbox.all().reduce((sum, e) => sum + JSON.stringify(e).length, 0),
      attachmentBytes: await this.storedAttachmentBytes(),
      lastPushAt: iso(sync.lastPushAt),
      lastPullAt: iso(sync.lastPullAt),
      lastErrorCode: label(sync.lastErrorCode ?? undefined, 60),
    };
  }

  /** Each attachment is measured once (its bytes never change); those of entries gone are forgotten. */
  private async storedAttachmentBytes(): Promise<number> {
    const ids = new Set(this.sources.outbox.all().flatMap((e) => attachmentsOf(e.action)));
    for (const id of this.attachmentBytes.keys()) if (!ids.has(id)) this.attachmentBytes.delete(id);
    let total = 0;
    for (const id of ids) {
      let bytes = this.attachmentBytes.get(id);
      if (bytes === undefined) {
        const data = await this.sources.attachments.get(id).catch(() => undefined);
        bytes = data === undefined || 'uri' in data ? 0 : data instanceof Uint8Array ? data.byteLength : data.size;
        this.attachmentBytes.set(id, bytes);
      }
      total += bytes;
    }
    return total;
  }

  /** Sends in `delay` ms (not sooner than a second after the last report); an earlier plan stands. */
  private schedule(delay: number) {
    if (!this.running || this.supported === false) return;
    const at = Math.max(this.sources.now() + delay, this.lastSentAt + MIN_GAP_MS);
    if (this.timer !== undefined && this.timerAt <= at) return;
    clearTimer(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      void this.send();
    }, at - this.sources.now());
  }

  private async send() {
    if (!this.running) return;
    if (this.sending) {
      this.dueAgain = true;
      return;
    }
    if (!this.sources.maySend()) return this.schedule(HEALTH_INTERVAL_MS);
    this.sending = true;
    try {
      const report = await this.report();
      // The socket once the service has shown it takes reports; until then a request, whose 404 says it does not.
      if (!(this.supported && this.sources.sendOnSocket(report))) {
        await this.sources.post(report);
        this.answered({ status: 'stored' });
      }
      this.undelivered = false;
    } catch (error) {
      this.undelivered = !(error instanceof ProblemError);
      if (error instanceof ProblemError && error.status === 404) this.supported = false;
      else if (error instanceof ProblemError) this.answered({ status: 'refused', code: error.code });
    } finally {
      this.sending = false;
      this.schedule(this.dueAgain ? 0 : HEALTH_INTERVAL_MS);
      this.dueAgain = false;
    }
  }

  private async renewId() {
    this.deviceId = newDeviceId(this.sources.randomId, this.sources.random);
    await this.sources.store.set(DEVICE_ID_KEY, this.deviceId);
    return this.deviceId;
  }
}
