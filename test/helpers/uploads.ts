import { deflateSync } from 'node:zlib';
import sharp from 'sharp';

/** A real PNG with a drawn stroke, like a signature pad exports. */
export function signaturePng(width = 400, height = 150, stroke = 'M10 100 C 60 20, 120 140, 180 60 S 300 20, 380 110'): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><path d="${stroke}" stroke="#102a43" stroke-width="4" fill="none"/></svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

/** A noisy image that compresses badly, for size-limit tests. */
export function noisyPng(width: number, height: number): Promise<Buffer> {
  const pixels = Buffer.alloc(width * height * 3);
  for (let i = 0; i < pixels.length; i++) pixels[i] = Math.floor(Math.random() * 256);
  return sharp(pixels, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

/**
 * An RGB PNG whose header says `width` × `height` and whose chunks are valid, with `rows` rows of
 * pixels (fewer than the height is broken pixel data) naming the row filter `filter` (0–4 are
 * real; anything else is broken pixel data too).
 */
export function rawPng(width: number, height: number, options: { filter?: number; rows?: number } = {}): Buffer {
  const { filter = 0, rows: rowCount = height } = options;
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes: Buffer) => {
    let c = 0xffffffff;
    for (const b of bytes) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const frame = Buffer.alloc(8 + body.length);
    frame.writeUInt32BE(data.length, 0);
    body.copy(frame, 4);
    frame.writeUInt32BE(crc(body), 4 + body.length);
    return frame;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bits per channel
  header[9] = 2; // RGB
  const rows = Buffer.concat(Array.from({ length: rowCount }, () => Buffer.concat([Buffer.from([filter]), Buffer.alloc(width * 3, 0x80)])));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

export const blob = (bytes: Buffer | string, type: string) =>
  new Blob([typeof bytes === 'string' ? bytes : new Uint8Array(bytes)], { type });

export interface CompletionParts {
  customer?: Buffer | null;
  driver?: Buffer | null;
  acknowledgements?: unknown;
  /** Send the acknowledgements as a JSON file part instead of a plain field. */
  acknowledgementsAsFile?: boolean;
}

/** The multipart body of POST /deliveries/{id}/complete. */
export async function completionForm(parts: CompletionParts = {}): Promise<FormData> {
  const form = new FormData();
  const customer = parts.customer === undefined ? await signaturePng() : parts.customer;
  const driver = parts.driver === undefined ? await signaturePng(300, 120, 'M20 80 L 100 40 L 160 100 L 280 30') : parts.driver;
  if (customer) form.append('customer_signature', blob(customer, 'image/png'), 'customer.png');
  if (driver) form.append('driver_signature', blob(driver, 'image/png'), 'driver.png');
  const ack = parts.acknowledgements === undefined ? { receiptConfirmed: true } : parts.acknowledgements;
  if (ack !== null) {
    const json = typeof ack === 'string' ? ack : JSON.stringify(ack);
    if (parts.acknowledgementsAsFile) form.append('acknowledgements', blob(json, 'application/json'), 'acknowledgements.json');
    else form.append('acknowledgements', json);
  }
  return form;
}
