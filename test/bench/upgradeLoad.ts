/**
 * The drivers of the upgrade scenario: each pushes a scan at a steady pace, some a photo now and
 * then, and holds a WebSocket; all go to whichever instance the load balancer (`target()`)
 * names at the moment. A request is sent again, with the same ids, after a 503 with
 * `Retry-After` (counted, allowed) and after anything else (counted as failed).
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { photo } from '../compat/scenario.js';

export interface Target {
  url: string;
  name: 'old' | 'new';
}

export interface Sent {
  target: Target['name'];
  startedAt: number;
  ms: number;
}

export class LoadStats {
  readonly sent: Sent[] = [];
  readonly failures: string[] = [];
  retried503 = 0;
  /** 401s answered by a fresh token, as the SDK does: each instance here is its own development issuer. */
  tokenRefreshes = 0;
  readonly eventIds: string[] = [];
  readonly reconnectsMs: number[] = [];
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class UpgradeDriver {
  private socket: WebSocket | undefined;
  private closedAt: number | undefined;
  private stopped = false;

  constructor(
    private token: string,
    private readonly freshToken: (url: string) => Promise<string>,
    private readonly itemId: string,
    private readonly deliveryId: string,
    private readonly withPhotos: boolean,
    private readonly target: () => Target,
    private readonly stats: LoadStats,
  ) {}

  /** Until `stop()`: a push every `intervalMs` (scan and unscan in turn, so every one applies), a photo every tenth. */
  async run(intervalMs: number) {
    this.connect();
    for (let i = 0; !this.stopped; i++) {
      const eventId = randomUUID();
      const event = {
        eventId,
        occurredAt: new Date().toISOString(),
        type: 'scan',
        deliveryItemId: this.itemId,
        action: i % 2 ? 'unscan' : 'scan',
      };
      await this.send(
        '/sync/push',
        () => JSON.stringify({ clientId: `upgrade-${this.token.slice(-8)}`, events: [event] }),
        'application/json',
      );
      this.stats.eventIds.push(eventId);
      if (this.withPhotos && i % 10 === 5) {
        const noteId = randomUUID();
        const image = await photo(i % 255);
        await this.send(`/deliveries/${this.deliveryId}/notes/image`, () => {
          const form = new FormData();
          form.append('noteId', noteId);
          form.append('clientEventId', noteId);
          form.append('file', new Blob([image], { type: 'image/jpeg' }), 'photo.jpg');
          return form;
        });
      }
      await pause(intervalMs * (0.5 + Math.random()));
    }
  }

  stop() {
    this.stopped = true;
    this.socket?.removeAllListeners('close');
    this.socket?.close();
  }

  /** Sent again until answered, at most 50 times (10 s): a request the service keeps refusing is reported, not retried for ever. */
  private async send(path: string, body: () => BodyInit, contentType?: string) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const target = this.target();
      const startedAt = Date.now();
      try {
        const headers: Record<string, string> = { authorization: `Bearer ${this.token}` };
        if (contentType) headers['content-type'] = contentType;
        // Bounded: a request the draining instance never answers is a failure, not a hang.
        const response = await fetch(`${target.url}${path}`, {
          method: 'POST',
          headers,
          body: body(),
          signal: AbortSignal.timeout(15_000),
        });
        await response.arrayBuffer();
        this.stats.sent.push({ target: target.name, startedAt, ms: Date.now() - startedAt });
        if (response.ok) return;
        if (response.status === 401) {
          this.stats.tokenRefreshes++;
          this.token = await this.freshToken(target.url);
          continue;
        }
        if (response.status === 503 && response.headers.get('retry-after')) this.stats.retried503++;
        else this.stats.failures.push(`${target.name} ${path}: ${response.status}`);
      } catch (error) {
        this.stats.failures.push(`${target.name} ${path}: ${(error as Error).cause ?? (error as Error).message}`);
      }
      await pause(200);
    }
  }

  private connect() {
    if (this.stopped) return;
    const target = this.target();
    const socket = new WebSocket(`${target.url.replace(/^http/, 'ws')}/sync/ws`, ['bearer', this.token]);
    this.socket = socket;
    socket.on('open', () => {
      socket.send(JSON.stringify({ type: 'resume', cursor: null }));
      if (this.closedAt !== undefined) this.stats.reconnectsMs.push(Date.now() - this.closedAt);
      this.closedAt = undefined;
    });
    socket.on('error', () => undefined);
    socket.on('unexpected-response', (_request, response) => {
      if (response.statusCode === 401)
        void this.freshToken(target.url).then((token) => {
          this.stats.tokenRefreshes++;
          this.token = token;
        });
      socket.terminate();
    });
    socket.on('close', () => {
      this.closedAt ??= Date.now();
      setTimeout(() => this.connect(), 50);
    });
  }
}
