import WebSocket from 'ws';

export interface ServerMessage {
  type: string;
  changes?: Array<{ seq: number; entity: string; id: string; data?: any }>;
  cursor?: string;
  code?: string;
  message?: string;
  errors?: Array<{ path: string; message: string }>;
}

/** A /sync/ws client for tests: collects messages and lets a test wait for one or for the close. */
export class SyncSocket {
  readonly messages: ServerMessage[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: Array<() => void> = [];

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.messages.push(JSON.parse(data.toString()));
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        for (const wake of this.waiters.splice(0)) wake();
      }),
    );
  }

  static open(baseUrl: string, options: { token?: string; protocols?: string[]; autoPong?: boolean } = {}): Promise<SyncSocket> {
    const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/sync/ws`, options.protocols ?? [], {
      headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
      autoPong: options.autoPong ?? true,
    });
    const socket = new SyncSocket(ws);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(socket));
      ws.once('unexpected-response', (_req, res) =>
        reject(
          Object.assign(new Error(`upgrade refused: ${res.statusCode}`), {
            status: res.statusCode,
            retryAfter: res.headers['retry-after'],
          }),
        ),
      );
      ws.once('error', reject);
    });
  }

  send(message: unknown) {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** Waits until a message after index `from` satisfies `match`; returns it. */
  async next(match: (m: ServerMessage) => boolean = () => true, from = 0, timeoutMs = 10_000): Promise<ServerMessage> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.slice(from).find(match);
      if (found) return found;
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error('socket closed while waiting for a message');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching message within ${timeoutMs} ms; got ${JSON.stringify(this.messages).slice(0, 500)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Every change received so far, in arrival order. */
  changes() {
    return this.messages.flatMap((m) => (m.type === 'changes' ? (m.changes ?? []) : []));
  }

  close() {
    this.ws.close();
    return this.closed;
  }
}

/** Opens /sync/ws (with `query`, and `origin` when given); answers 101 when it opened, else the refusal's status, type and problem. */
export function tryUpgrade(url: string, token: string, { query = '', origin }: { query?: string; origin?: string } = {}) {
  const ws = new WebSocket(
    `${url.replace(/^http/, 'ws')}/sync/ws${query}`,
    ['bearer', token],
    origin === undefined ? {} : { headers: { origin } },
  );
  return new Promise<{ status: number; type?: string; body?: any }>((resolve, reject) => {
    ws.once('open', () => {
      ws.close();
      resolve({ status: 101 });
    });
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, type: res.headers['content-type'], body: JSON.parse(text) }));
    });
    ws.once('error', reject);
  });
}
