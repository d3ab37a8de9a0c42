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
  return sharp(pixels, { raw: { width, height, channels: 3 } }).png().toBuffer();
}

export const blob = (bytes: Buffer | string, type: string) => new Blob([typeof bytes === 'string' ? bytes : new Uint8Array(bytes)], { type });

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
