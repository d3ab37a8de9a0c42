import net from 'node:net';

export interface Reply {
  status: number;
  text: string;
}

const HEADER_END = Buffer.from('\r\n\r\n');

/**
 * One keep-alive HTTP/1.1 connection that carries one request at a time, as a phone's does. It
 * reads what the service sends: a status line, headers and a body of `Content-Length` bytes.
 */
class Connection {
  private buffered: Buffer = Buffer.alloc(0);
  private waiting?: { resolve: (reply: Reply) => void; reject: (error: Error) => void };
  /** Set when the socket closed or the service asked to close it: it takes no more requests. */
  done = false;
  /** Bytes read for the request in flight: none means the service never answered it. */
  received = 0;
  /** When its last answer was read (monotonic ms), or it was opened. */
  idleSince = performance.now();

  constructor(private readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error) => this.fail(error));
    socket.on('close', () => this.fail(new Error('the connection closed before the answer')));
  }

  static open(host: string, port: number): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port });
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new Connection(socket));
      });
      socket.once('error', reject);
    });
  }

  send(head: string, payload: string | undefined): Promise<Reply> {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.received = 0;
      this.socket.write(payload === undefined ? head : head + payload);
    });
  }

  private onData(chunk: Buffer) {
    this.received += chunk.length;
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const headerEnd = this.buffered.indexOf(HEADER_END);
    if (headerEnd < 0) return;
    const head = this.buffered.toString('latin1', 0, headerEnd).toLowerCase();
    const status = Number(head.slice(9, 12));
    const length = /\r\ncontent-length: *(\d+)/.exec(head);
    if (!length && /\r\ntransfer-encoding:/.test(head)) {
      this.fail(new Error('a body without Content-Length is not read by this client'));
      return;
    }
    const end = headerEnd + HEADER_END.length + (length ? Number(length[1]) : 0);
    if (this.buffered.length < end) return;
    const text = this.buffered.toString('utf8', headerEnd + HEADER_END.length, end);
    this.buffered = this.buffered.subarray(end);
    if (/\r\nconnection: *close/.test(head)) this.close();
    const waiting = this.waiting;
    this.waiting = undefined;
    this.idleSince = performance.now();
    waiting?.resolve({ status, text });
  }

  private fail(error: Error) {
    this.close();
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.reject(error);
  }

  close() {
    this.done = true;
    this.socket.destroy();
  }
}

/** Idle connections by `host:port`, reused last in, first out. */
const idle = new Map<string, Connection[]>();

/**
 * A request over a keep-alive connection of the pool. The load runs beside the service on the
 * same vCPUs, so it must cost little: Node's `http` client took about 0.3 ms of CPU per request,
 * this one writes the request in one piece and reads the answer in a few string operations.
 */
export async function request(
  method: string,
  url: string,
  options: { token?: string; admin?: string; body?: unknown } = {},
): Promise<Reply> {
  const { hostname, port, pathname, search } = new URL(url);
  const key = `${hostname}:${port}`;
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  let head = `${method} ${pathname}${search} HTTP/1.1\r\nHost: ${key}\r\n`;
  if (options.token) head += `Authorization: Bearer ${options.token}\r\n`;
  if (options.admin) head += `X-Admin-Api-Key: ${options.admin}\r\n`;
  if (payload !== undefined) head += `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n`;
  head += '\r\n';
  const pool = idle.get(key) ?? [];
  idle.set(key, pool);
  let connection = pool.pop();
  while (connection?.done) connection = pool.pop();
  const idleMs = connection && Math.round(performance.now() - connection.idleSince);
  connection ??= await Connection.open(hostname, Number(port));
  let reply: Reply;
  try {
    reply = await connection.send(head, payload);
  } catch (error) {
    // The service closes a connection idle for its keep-alive time; a request written as it did
    // so is reset unread. A phone's client sends it again on a new connection, and so does this.
    if (idleMs === undefined || connection.received > 0)
      throw failedOn(error, idleMs === undefined ? 'a new connection' : 'an answer begun');
    connection = await Connection.open(hostname, Number(port));
    reply = await connection.send(head, payload).catch((again: unknown) => {
      throw failedOn(again, `a new connection, after a reset of one idle for ${idleMs} ms`);
    });
  }
  if (!connection.done) pool.push(connection);
  return reply;
}

/** The error, saying on what it happened: which resets a retry cannot mend tells where they come from. */
const failedOn = (error: unknown, where: string) => new Error(`${(error as Error).message} (on ${where})`, { cause: error });

export async function requestJson<T = any>(method: string, url: string, options: Parameters<typeof request>[2] = {}): Promise<T> {
  const reply = await request(method, url, options);
  if (reply.status >= 300) throw new Error(`${method} ${url}: ${reply.status} ${reply.text.slice(0, 300)}`);
  return (reply.text ? JSON.parse(reply.text) : undefined) as T;
}
