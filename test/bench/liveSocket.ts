/**
 * A driver's WebSocket of the live scenario, in as little as the protocol asks (RFC 6455): the
 * load processes share the machine with the service they measure, so each socket should cost
 * them little CPU and heap. It offers no compression (the sockets of React Native offer none
 * either), answers pings, reads text messages (fragmented or not) and masks what it sends.
 */
import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';

const ACCEPT_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const HEADER_END = Buffer.from('\r\n\r\n');
const enum Opcode {
  Continuation = 0x0,
  Text = 0x1,
  Binary = 0x2,
  Close = 0x8,
  Ping = 0x9,
  Pong = 0xa,
}

export interface SocketEvents {
  message(text: string): void;
  /** The connection ended after the upgrade; `code` from the service's close frame, if it sent one. */
  close(code: number | undefined): void;
  error(error: Error): void;
}

export class LiveSocket {
  private buffered: Buffer = Buffer.alloc(0);
  private fragments: Buffer[] = [];
  private closeCode?: number;

  private constructor(
    private readonly socket: net.Socket,
    private readonly events: SocketEvents,
  ) {
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('error', (error) => events.error(error));
    socket.on('close', () => events.close(this.closeCode));
  }

  /** Upgrades `GET url` with `headers`; rejects on anything but 101 with the right accept key. */
  static open(url: string, headers: Record<string, string>, events: SocketEvents): Promise<LiveSocket> {
    const { hostname, port, pathname } = new URL(url);
    const key = randomBytes(16).toString('base64');
    const expected = createHash('sha1')
      .update(key + ACCEPT_GUID)
      .digest('base64');
    const lines = [
      `GET ${pathname} HTTP/1.1`,
      `Host: ${hostname}:${port}`,
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Key: ${key}`,
      'Sec-WebSocket-Version: 13',
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ];
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: hostname, port: Number(port) });
      socket.setNoDelay(true);
      let head = Buffer.alloc(0);
      const onData = (chunk: Buffer) => {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf(HEADER_END);
        if (end < 0) return;
        socket.off('data', onData);
        socket.off('error', reject);
        const text = head.toString('latin1', 0, end);
        const status = Number(text.slice(9, 12));
        const accept = /\r\nsec-websocket-accept: *(\S+)/i.exec(text)?.[1];
        if (status !== 101 || accept !== expected) {
          socket.destroy();
          reject(new Error(`upgrade answered ${status}${status === 101 ? ' with a wrong accept key' : ''}`));
          return;
        }
        const live = new LiveSocket(socket, events);
        resolve(live);
        const rest = head.subarray(end + HEADER_END.length);
        if (rest.length > 0) live.read(rest);
      };
      socket.on('data', onData);
      socket.once('error', reject);
      socket.write(lines.join('\r\n') + '\r\n\r\n');
    });
  }

  send(text: string) {
    this.frame(Opcode.Text, Buffer.from(text));
  }

  /** Ends the connection at once, without a closing handshake. */
  terminate() {
    this.socket.destroy();
  }

  private read(chunk: Buffer) {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    for (;;) {
      const frame = this.nextFrame();
      if (!frame) return;
      this.handle(frame.fin, frame.opcode, frame.payload);
    }
  }

  /** The next whole frame in the buffer, if there is one (a service's frames are never masked). */
  private nextFrame(): { fin: boolean; opcode: Opcode; payload: Buffer } | undefined {
    const b = this.buffered;
    if (b.length < 2) return undefined;
    let length = b[1] & 0x7f;
    let offset = 2;
    if (length === 126) {
      if (b.length < 4) return undefined;
      length = b.readUInt16BE(2);
      offset = 4;
    } else if (length === 127) {
      if (b.length < 10) return undefined;
      length = Number(b.readBigUInt64BE(2));
      offset = 10;
    }
    if (b.length < offset + length) return undefined;
    this.buffered = b.subarray(offset + length);
    return { fin: (b[0] & 0x80) !== 0, opcode: b[0] & 0x0f, payload: b.subarray(offset, offset + length) };
  }

  private handle(fin: boolean, opcode: Opcode, payload: Buffer) {
    switch (opcode) {
      case Opcode.Text:
      case Opcode.Binary:
      case Opcode.Continuation:
        this.fragments.push(payload);
        if (!fin) return;
        this.events.message(Buffer.concat(this.fragments).toString('utf8'));
        this.fragments = [];
        return;
      case Opcode.Ping:
        this.frame(Opcode.Pong, payload);
        return;
      case Opcode.Close:
        this.closeCode = payload.length >= 2 ? payload.readUInt16BE(0) : undefined;
        this.frame(Opcode.Close, payload.subarray(0, 2));
        this.socket.end();
        return;
      case Opcode.Pong:
        return;
    }
  }

  /** A client's frame: masked, as the protocol requires of every frame a client sends. */
  private frame(opcode: Opcode, payload: Buffer) {
    const length = payload.length;
    const head = length < 126 ? 2 : length < 65536 ? 4 : 10;
    const frame = Buffer.allocUnsafe(head + 4 + length);
    frame[0] = 0x80 | opcode;
    if (length < 126) frame[1] = 0x80 | length;
    else if (length < 65536) {
      frame[1] = 0x80 | 126;
      frame.writeUInt16BE(length, 2);
    } else {
      frame[1] = 0x80 | 127;
      frame.writeBigUInt64BE(BigInt(length), 2);
    }
    const mask = randomBytes(4);
    mask.copy(frame, head);
    for (let i = 0; i < length; i++) frame[head + 4 + i] = payload[i] ^ mask[i & 3];
    this.socket.write(frame);
  }
}
