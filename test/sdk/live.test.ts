import { afterEach, describe, expect, it, vi } from 'vitest';
import { LiveChanges, type LiveOptions, type WebSocketLike } from '../../client-sdk/live.js';
import { defaultBackoff } from '../../client-sdk/backoff.js';

class FakeSocket implements WebSocketLike {
  readyState = 0;
  sent: unknown[] = [];
  onopen: ((event: unknown) => void) | null = null;
  onmessage: ((event: { data: unknown }) => void) | null = null;
  onclose: ((event: { code: number }) => void) | null = null;
  onerror: ((event: unknown) => void) | null = null;
  constructor(
    readonly url: string,
    readonly protocols: string[],
  ) {}
  send(data: string) {
    this.sent.push(JSON.parse(data));
  }
  close() {
    this.readyState = 3;
  }
  open() {
    this.readyState = 1;
    this.onopen?.({});
  }
  drop(code: number) {
    this.readyState = 3;
    this.onclose?.({ code });
  }
}

afterEach(() => vi.useRealTimers());

function live(overrides: Partial<LiveOptions> = {}) {
  const sockets: FakeSocket[] = [];
  const tokens: boolean[] = [];
  const pulls: number[] = [];
  const options: LiveOptions = {
    baseUrl: 'https://tourline.test/api',
    webSocket: (url, protocols) => {
      const s = new FakeSocket(url, protocols);
      sockets.push(s);
      return s;
    },
    token: async (forceRefresh) => {
      tokens.push(forceRefresh);
      return forceRefresh ? 'fresh' : 'old';
    },
    cursor: () => 'cursor-7',
    ingest: async () => undefined,
    pull: async () => {
      pulls.push(Date.now());
    },
    onConnected: () => undefined,
    onError: () => undefined,
    onCursorRefused: () => undefined,
    pollIntervalMs: 5000,
    heartbeatMs: 25_000,
    backoff: defaultBackoff,
    random: () => 0.5,
    ...overrides,
  };
  return { changes: new LiveChanges(options), sockets, tokens, pulls };
}

describe('live changes', () => {
  it('resumes from the persisted cursor with the token as the subprotocol pair bearer, <token>', async () => {
    const { changes, sockets } = live();
    changes.start();
    await vi.waitFor(() => expect(sockets).toHaveLength(1));
    expect(sockets[0].url).toBe('wss://tourline.test/api/sync/ws?client=%40tourline%2Fclient%2F0.2.0%3B%20protocol%3D1');
    expect(sockets[0].protocols).toEqual(['bearer', 'old']);
    sockets[0].open();
    expect(sockets[0].sent).toEqual([{ type: 'resume', cursor: 'cursor-7' }]);
    expect(changes.connected).toBe(true);
    changes.stop();
  });

  it('reconnects at once with a fresh token when the server closes with 4401', async () => {
    const { changes, sockets, tokens } = live();
    changes.start();
    await vi.waitFor(() => expect(sockets).toHaveLength(1));
    sockets[0].open();
    sockets[0].drop(4401);
    await vi.waitFor(() => expect(sockets).toHaveLength(2));
    expect(tokens).toEqual([false, true]);
    expect(sockets[1].protocols).toEqual(['bearer', 'fresh']);
    changes.stop();
  });

  it('pulls while the socket is down and reconnects with growing delays', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const { changes, sockets, pulls } = live();
    changes.start();
    await vi.advanceTimersByTimeAsync(0);
    sockets[0].open();
    sockets[0].drop(1006);
    const reconnectsAt: number[] = [];
    const start = Date.now();
    for (let i = 0; i < 4; i++) {
      const before = sockets.length;
      while (sockets.length === before) await vi.advanceTimersByTimeAsync(50);
      reconnectsAt.push(Date.now() - start);
      sockets.at(-1)!.drop(1006);
    }
    const gaps = reconnectsAt.map((t, i) => t - (reconnectsAt[i - 1] ?? 0));
    expect(gaps[0]).toBeLessThanOrEqual(5000);
    expect(gaps[3]).toBeGreaterThan(gaps[0]);
    expect(pulls.length).toBeGreaterThanOrEqual(2);
    sockets.at(-1)!.open();
    const pullsWhenUp = pulls.length;
    await vi.advanceTimersByTimeAsync(20_000);
    expect(pulls.length).toBe(pullsWhenUp);
    changes.stop();
  });

  it('pulls every poll interval when there is no WebSocket at all', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const { changes, pulls } = live({ webSocket: undefined });
    changes.start();
    await vi.advanceTimersByTimeAsync(20_000);
    expect(pulls).toHaveLength(5);
    changes.stop();
  });
});
