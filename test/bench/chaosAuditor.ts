import { WebSocket } from 'ws';
import type { Route } from './chaosNetwork.js';

/**
 * An independent reader of one account's live feed on the instance the driver does NOT write
 * through: it records every seq it receives and resumes from its last cursor after every cut.
 */
export class Auditor {
  readonly seqs = new Set<number>();
  maxSeq = 0;
  private cursor: string;
  private socket: WebSocket | undefined;
  private stopped = false;
  constructor(
    readonly driver: { index: number; personalnummer: number },
    start: string,
    private readonly tokenValue: string,
    private readonly route: Route,
  ) {
    this.cursor = start;
  }

  connect() {
    if (this.stopped) return;
    const instance = this.route(1 - (this.driver.index % 2));
    const socket = new WebSocket(`${instance.url.replace(/^http/, 'ws')}/sync/ws`, {
      headers: { authorization: `Bearer ${this.tokenValue}` },
    });
    this.socket = socket;
    socket.on('open', () => socket.send(JSON.stringify({ type: 'resume', cursor: this.cursor })));
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as { type: string; changes?: { seq: number }[]; cursor?: string };
      if (message.type !== 'changes') return;
      for (const change of message.changes!) {
        this.seqs.add(change.seq);
        this.maxSeq = Math.max(this.maxSeq, change.seq);
      }
      this.cursor = message.cursor!;
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (!this.stopped) setTimeout(() => this.connect(), 100 + Math.random() * 200);
    });
  }

  cut() {
    this.socket?.terminate();
  }
  stop() {
    this.stopped = true;
    this.socket?.terminate();
  }
}
