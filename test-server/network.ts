import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';

/** Which requests a fault applies to: a part of the path, and the method if given. */
export interface RequestMatch {
  path?: string;
  method?: string;
}

/** What went through the network: counted so a test can tell its fault really happened. */
export interface NetworkStats {
  /** Requests the service answered and the client heard. */
  answered: number;
  /** Requests the service applied and answered, whose answer never reached the client (`loseAnswers`). */
  lost: number;
  /** Requests and WebSocket handshakes that never reached the service (`cut`, `failUploads`). */
  refused: number;
}

/** The faults a test can put between the app and the service. */
export interface NetworkControl {
  /** Resets every open connection (WebSockets too) and every new one until `restore()`: the device is offline. */
  cut(): void;
  /** Ends every fault: connections go through again, unlost answers arrive, no delay. */
  restore(): void;
  /** The next `count` matching requests reach the service, which applies them; their answers are lost. */
  loseAnswers(count: number, match?: RequestMatch): void;
  /** Every request, answer and WebSocket message arrives `ms` later (0 ends it). */
  slow(ms: number): void;
  /** Uploads (multipart requests: photos, signatures) are reset before they reach the service, until `restore()`. */
  failUploads(): void;
  readonly stats: Readonly<NetworkStats>;
}

const matches = (match: RequestMatch, req: http.IncomingMessage) =>
  (!match.method || match.method.toUpperCase() === req.method) && (!match.path || (req.url ?? '').includes(match.path));

/**
 * A loopback proxy in front of the service: the app talks to it as to the service, over HTTP and
 * WebSocket, whatever client it uses, and the test decides what gets through.
 */
export class FaultyNetwork implements NetworkControl {
  readonly stats: NetworkStats = { answered: 0, lost: 0, refused: 0 };
  private down = false;
  private uploadsFail = false;
  private delayMs = 0;
  private losses: { match: RequestMatch; left: number }[] = [];
  private readonly connections = new Set<Duplex>();
  private readonly agent = new http.Agent({ keepAlive: true });

  private constructor(
    private readonly server: http.Server,
    private readonly target: { host: string; port: number },
  ) {}

  /** A proxy on a free loopback port in front of the service at `target` (`http://host:port`). */
  static async start(target: string): Promise<FaultyNetwork> {
    const { hostname, port } = new URL(target);
    const server = http.createServer();
    const network = new FaultyNetwork(server, { host: hostname.replace(/^\[|\]$/g, ''), port: Number(port) });
    server.on('connection', (socket) => network.track(socket));
    server.on('request', (req, res) => network.forward(req, res));
    server.on('upgrade', (req, socket, head) => network.tunnel(req, socket, head));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port: 0, host: '127.0.0.1' }, resolve);
    });
    return network;
  }

  get url() {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  cut() {
    this.down = true;
    for (const socket of this.connections) socket.destroy();
  }
  restore() {
    this.down = false;
    this.uploadsFail = false;
    this.delayMs = 0;
    this.losses = [];
  }
  loseAnswers(count: number, match: RequestMatch = {}) {
    this.losses.push({ match, left: count });
  }
  slow(ms: number) {
    this.delayMs = ms;
  }
  failUploads() {
    this.uploadsFail = true;
  }

  async close() {
    this.cut();
    this.agent.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private track(socket: Duplex) {
    if (this.down) {
      this.stats.refused += 1;
      socket.destroy();
      return;
    }
    this.connections.add(socket);
    socket.once('close', () => this.connections.delete(socket));
  }

  private later(work: () => void) {
    if (this.delayMs > 0) setTimeout(work, this.delayMs);
    else work();
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse) {
    if (this.down || (this.uploadsFail && (req.headers['content-type'] ?? '').startsWith('multipart/'))) {
      this.stats.refused += 1;
      req.socket.destroy();
      return;
    }
    this.later(() => {
      const upstream = http.request(
        { host: this.target.host, port: this.target.port, method: req.method, path: req.url, headers: req.headers, agent: this.agent },
        (answer) => {
          const loss = this.losses.find((l) => l.left > 0 && matches(l.match, req));
          if (loss) {
            // The service has answered, so it applied the request; the client hears nothing.
            loss.left -= 1;
            answer.resume();
            answer.once('end', () => {
              this.stats.lost += 1;
              req.socket.destroy();
            });
            return;
          }
          this.later(() => {
            res.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
            answer.pipe(res);
            answer.once('end', () => (this.stats.answered += 1));
          });
        },
      );
      upstream.once('error', () => req.socket.destroy());
      req.pipe(upstream);
    });
  }

  /** A WebSocket: the handshake goes on to the service as it came, then bytes flow both ways (late while `slow`). */
  private tunnel(req: http.IncomingMessage, socket: Duplex, head: Buffer) {
    if (this.down) {
      this.stats.refused += 1;
      socket.destroy();
      return;
    }
    this.later(() => {
      const upstream = net.connect(this.target);
      this.track(upstream);
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length) upstream.write(head);
      this.relay(socket, upstream);
      this.relay(upstream, socket);
      upstream.once('error', () => socket.destroy());
      socket.once('error', () => upstream.destroy());
      upstream.once('close', () => socket.destroy());
      socket.once('close', () => upstream.destroy());
    });
  }

  /** Copies `from` to `to`, each chunk `delayMs` late and in order. */
  private relay(from: Duplex, to: Duplex) {
    let lastAt = 0;
    from.on('data', (chunk: Buffer) => {
      if (this.delayMs === 0 && lastAt <= Date.now()) {
        to.write(chunk);
        return;
      }
      lastAt = Math.max(lastAt, Date.now() + this.delayMs);
      setTimeout(() => to.writable && to.write(chunk), lastAt - Date.now());
    });
  }
}
