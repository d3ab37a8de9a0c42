import type { DeviceReportAnswer } from '../shared/schemas/devices.js';
import type { Change } from '../shared/schemas/sync.js';
import { CLIENT_QUERY_PARAMETER } from '../shared/rules/clientVersion.js';
import { joinUrl } from './api.js';
import { backoffDelay, type BackoffPolicy } from './backoff.js';
import { clearTimer } from './timers.js';
import { SDK_CLIENT_NAME } from './version.js';

/**
 * The part of the WebSocket API the SDK uses. The browser's, React Native's and the `ws`
 * package's WebSocket each fit without a cast (test/sdk/types.test.ts compiles all three): the
 * handlers take their platform's own event types, so the SDK reads only `data` of a message and
 * `code` of a close (optional in React Native's types).
 */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: any) => void) | null;
  onmessage: ((event: any) => void) | null;
  onclose: ((event: any) => void) | null;
  onerror: ((event: any) => void) | null;
}

/** Opens a socket; the token travels as the subprotocol pair `bearer, <token>`, which browsers can send. */
export type WebSocketFactory = (url: string, protocols: string[]) => WebSocketLike;

export function detectWebSocket(): WebSocketFactory | undefined {
  const Ctor = (globalThis as { WebSocket?: new (url: string, protocols: string[]) => WebSocketLike }).WebSocket;
  return Ctor ? (url, protocols) => new Ctor(url, protocols) : undefined;
}

export interface LiveOptions {
  baseUrl: string;
  webSocket: WebSocketFactory | undefined;
  token: (forceRefresh: boolean) => Promise<string>;
  cursor: () => string | null;
  /** Applies a message's changes; runs serialized with pulls. */
  ingest: (changes: Change[], cursor: string) => Promise<void>;
  /** Pulls /sync/changes to the head; used while the socket is down. */
  pull: () => Promise<void>;
  onConnected: (connected: boolean) => void;
  onError: (error: unknown) => void;
  /** The service's answer to a device report sent on the socket. */
  onDevice?: (answer: DeviceReportAnswer) => void;
  /** The server refused the resume cursor (expired, or another database): the client resyncs. */
  onCursorRefused: () => void;
  pollIntervalMs: number;
  heartbeatMs: number;
  backoff: BackoffPolicy;
  random: () => number;
}

/** A close code the server uses when the token expired: reconnect with a fresh token at once. */
const TOKEN_EXPIRED = 4401;

/**
 * Live changes: a WebSocket that resumes from the persisted cursor and reconnects with backoff;
 * while it is down (or there is no WebSocket at all) the feed is pulled every few seconds.
 */
export class LiveChanges {
  private socket: WebSocketLike | undefined;
  private attempt = 0;
  private stopped = true;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private pollTimer: ReturnType<typeof setInterval> | undefined;
  private heartbeatTimer: ReturnType<typeof setInterval> | undefined;
  private lastMessageAt = 0;
  private tokenRefreshes = 0;
  connected = false;

  constructor(private readonly options: LiveOptions) {}

  start() {
    if (!this.stopped) return;
    this.stopped = false;
    void this.connect();
  }

  stop() {
    this.stopped = true;
    clearTimer(this.reconnectTimer);
    this.stopPolling();
    clearTimer(this.heartbeatTimer);
    const socket = this.socket;
    this.socket = undefined;
    if (socket) {
      socket.onclose = null;
      socket.onmessage = null;
      try {
        socket.close(1000, 'client stopped');
      } catch {
        /* already closed */
      }
    }
    this.setConnected(false);
  }

  /** Sends a message on the open socket; false when none is open. */
  send(message: unknown): boolean {
    if (!this.connected || !this.socket) return false;
    try {
      this.socket.send(JSON.stringify(message));
      return true;
    } catch {
      return false;
    }
  }

  /** Reconnects, so the next resume uses the current cursor. */
  restart() {
    if (this.stopped) return;
    this.stop();
    this.start();
  }

  private wsUrl() {
    // By hand: Hermes has no URL, and React Native's cannot set a protocol. The SDK's name goes
    // in the query: a browser cannot set a header on a WebSocket.
    const url = joinUrl(this.options.baseUrl, 'sync/ws').replace(/^http/, 'ws');
    return `${url}?${CLIENT_QUERY_PARAMETER}=${encodeURIComponent(SDK_CLIENT_NAME)}`;
  }

  private async connect(forceRefresh = false) {
    if (this.stopped) return;
    if (!this.options.webSocket) {
      this.startPolling();
      return;
    }
    let socket: WebSocketLike;
    try {
      const token = await this.options.token(forceRefresh);
      if (this.stopped) return;
      socket = this.options.webSocket(this.wsUrl(), ['bearer', token]);
    } catch (error) {
      this.options.onError(error);
      this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    let queue = Promise.resolve();
    socket.onopen = () => {
      this.lastMessageAt = Date.now();
      this.attempt = 0;
      socket.send(JSON.stringify({ type: 'resume', cursor: this.options.cursor() }));
      this.setConnected(true);
      this.startHeartbeat(socket);
    };
    socket.onmessage = (event: { data: unknown }) => {
      this.lastMessageAt = Date.now();
      const message = parse(event.data);
      if (message?.type === 'changes') {
        this.tokenRefreshes = 0;
        queue = queue.then(() => this.options.ingest(message.changes as Change[], message.cursor as string)).catch(this.options.onError);
      } else if (message?.type === 'device') {
        this.options.onDevice?.(message as unknown as DeviceReportAnswer);
      } else if (message?.type === 'error') {
        this.options.onError(Object.assign(new Error(String(message.message)), { code: message.code }));
        if (message.code === 'validation') this.options.onCursorRefused();
      }
    };
    socket.onerror = () => undefined;
    socket.onclose = (event: { code?: number }) => {
      if (this.socket !== socket) return;
      this.socket = undefined;
      clearTimer(this.heartbeatTimer);
      this.setConnected(false);
      if (this.stopped) return;
      if (event.code === TOKEN_EXPIRED && this.tokenRefreshes++ < 3) {
        void this.connect(true);
        return;
      }
      this.scheduleReconnect();
    };
  }

  private scheduleReconnect() {
    if (this.stopped) return;
    this.startPolling();
    clearTimer(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => void this.connect(), backoffDelay(this.attempt++, this.options.random, this.options.backoff));
  }

  private startHeartbeat(socket: WebSocketLike) {
    clearTimer(this.heartbeatTimer);
    // A half-open connection (the phone changed networks) only shows as silence: ping, and give up after two beats.
    this.heartbeatTimer = setInterval(() => {
      if (Date.now() - this.lastMessageAt > 2 * this.options.heartbeatMs) {
        try {
          socket.close(4000, 'heartbeat timeout');
        } catch {
          /* gone */
        }
        socket.onclose?.({ code: 4000 });
        return;
      }
      try {
        socket.send(JSON.stringify({ type: 'ping' }));
      } catch {
        /* closing */
      }
    }, this.options.heartbeatMs);
  }

  private setConnected(connected: boolean) {
    if (this.connected === connected) return;
    this.connected = connected;
    if (connected) this.stopPolling();
    this.options.onConnected(connected);
  }

  private startPolling() {
    if (this.pollTimer || this.stopped) return;
    const poll = () => void this.options.pull().catch(this.options.onError);
    poll();
    this.pollTimer = setInterval(poll, this.options.pollIntervalMs);
  }

  private stopPolling() {
    clearTimer(this.pollTimer);
    this.pollTimer = undefined;
  }
}

function parse(data: unknown): Record<string, unknown> | undefined {
  try {
    // The service sends text frames; a binary one is read where the platform can decode it.
    const text = typeof data === 'string' ? data : new TextDecoder().decode(data as ArrayBuffer);
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
