import type { IncomingMessage } from 'node:http';
import type { Readable, Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { DomainError, validation } from '../errors.js';

/** The client went away before its body arrived: nobody is left to answer. */
export class RequestAborted extends Error {}

const unsupported = () => new DomainError('unsupported_media_type', 'Unsupported body encoding');
const tooLarge = () => new DomainError('payload_too_large', 'The body exceeds the size limit');

const inflaters: Record<string, () => Transform> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/** Whether the request says it carries a body (a length, even 0, or chunks), as HTTP frames one. */
const framesBody = (req: IncomingMessage) => req.headers['transfer-encoding'] !== undefined || req.headers['content-length'] !== undefined;

const decoders = new Map<string, TextDecoder>();

/** The decoder of a JSON body's charset (one per charset, kept); JSON is Unicode, so only UTF encodings are taken. */
function decoderFor(contentType: string): TextDecoder {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType);
  const charset = match ? match[1].toLowerCase() : 'utf-8';
  let decoder = decoders.get(charset);
  if (decoder) return decoder;
  if (!charset.startsWith('utf-')) throw unsupported();
  try {
    // TextDecoder drops a byte order mark, as the JSON spec lets a parser do.
    decoder = new TextDecoder(charset);
  } catch {
    throw unsupported();
  }
  decoders.set(charset, decoder);
  return decoder;
}

/** Resolves once the request has been read to its end or its connection is gone. */
const finished = (req: IncomingMessage) =>
  new Promise<void>((resolve) => {
    if (req.complete || req.destroyed) return resolve();
    req.once('end', resolve).once('close', resolve);
  });

/**
 * The body as sent, inflated when the client compressed it, refused past `limitBytes` (after
 * inflating). A refused body is still read to its end, unkept, before the refusal is answered:
 * the client is sending it anyway, and the connection stays usable.
 */
function readBytes(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  const inflate = encoding === 'identity' ? undefined : inflaters[encoding];
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    let settled = false;
    const refuse = (error: Error) => {
      if (settled) return;
      settled = true;
      if (inflate) req.unpipe();
      req.resume();
      void finished(req).then(() => reject(error));
    };
    if (encoding !== 'identity' && !inflate) return refuse(unsupported());
    if (!inflate && Number(req.headers['content-length']) > limitBytes) return refuse(tooLarge());
    const source: Readable = inflate ? req.pipe(inflate()) : req;
    source.on('data', (chunk: Buffer) => {
      if (settled) return;
      length += chunk.length;
      if (length > limitBytes) refuse(tooLarge());
      else chunks.push(chunk);
    });
    source.once('end', () => {
      if (settled) return;
      settled = true;
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, length));
    });
    // A compressed body that does not inflate.
    if (inflate) source.once('error', () => refuse(validation('The body is not valid JSON')));
    const aborted = () => {
      if (!req.complete) refuse(new RequestAborted('the request was aborted'));
    };
    req.on('error', aborted).once('close', aborted);
  });
}

/**
 * Reads a JSON body: undefined when the request frames none or says it is not
 * `application/json`. `check` sees the raw bytes before they are parsed (the density budget).
 * A top-level value must be an object or an array.
 */
export async function readJsonBody(
  req: IncomingMessage,
  options: { limitBytes: number; check?: (body: Buffer) => void },
): Promise<unknown> {
  const contentType = req.headers['content-type'];
  if (!contentType || !framesBody(req)) return undefined;
  const semicolon = contentType.indexOf(';');
  const mediaType = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  if (mediaType !== 'application/json') return undefined;
  const decoder = decoderFor(contentType);
  const bytes = await readBytes(req, options.limitBytes);
  if (bytes.length === 0) return {};
  options.check?.(bytes);
  const text = decoder.decode(bytes);
  const first = /\S/.exec(text)?.[0];
  if (first !== '{' && first !== '[') throw validation('The body is not valid JSON');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw validation('The body is not valid JSON');
  }
}
