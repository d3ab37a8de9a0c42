import type { Request } from 'express';
import busboy from 'busboy';
import { DomainError, validation } from '../errors.js';

export interface UploadedFile {
  field: string;
  filename: string | undefined;
  contentType: string;
  bytes: Buffer;
}

export interface MultipartBody {
  /** File parts by field name (a name sent twice, as a file or a field, is refused). */
  files: Map<string, UploadedFile>;
  /** Plain fields by name. */
  fields: Map<string, string>;
}

export interface MultipartOptions {
  /** Upper bound for the whole body and therefore for every single part (UPLOAD_LIMIT_BYTES). */
  limitBytes: number;
  maxParts?: number;
}

const tooLarge = (limitBytes: number) => new DomainError('payload_too_large', `The upload exceeds ${limitBytes} bytes`);

/**
 * Reads a multipart/form-data request in one streaming pass, keeping every part in memory up
 * to the limit. Not multipart → 415, a part or the body over the limit → 413, a broken body → 400.
 * No body at all has no parts: the route then says which one is missing (400).
 */
export function readMultipart(req: Request, options: MultipartOptions): Promise<MultipartBody> {
  // `is` answers null for a request without a body; `Content-Length: 0` is one with an empty one.
  const multipart = req.is('multipart/form-data');
  if (multipart === null || req.headers['content-length'] === '0') return Promise.resolve({ files: new Map(), fields: new Map() });
  if (!multipart) {
    return Promise.reject(new DomainError('unsupported_media_type', 'Send the body as multipart/form-data'));
  }
  const { limitBytes, maxParts = 20 } = options;
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      defParamCharset: 'utf8',
      limits: { fileSize: limitBytes, fieldSize: limitBytes, parts: maxParts, fieldNameSize: 200 },
    });
  } catch (error) {
    return Promise.reject(validation(`Malformed multipart request: ${(error as Error).message}`));
  }

  return new Promise<MultipartBody>((resolve, reject) => {
    const body: MultipartBody = { files: new Map(), fields: new Map() };
    let total = 0;
    let settled = false;
    const fail = (error: DomainError) => {
      if (settled) return;
      settled = true;
      // Stop parsing and let the rest of the body drain, so the client still receives the answer.
      req.unpipe(parser);
      req.resume();
      reject(error);
    };
    const count = (bytes: number) => {
      total += bytes;
      if (total > limitBytes) fail(tooLarge(limitBytes));
    };
    // Two parts of one name leave it open which one the client meant: the second fails the request.
    const names = new Set<string>();
    const claimName = (field: string) => {
      if (names.has(field)) {
        fail(validation(`The part ${field} is sent more than once`, [{ path: field, message: 'sent more than once' }]));
        return false;
      }
      names.add(field);
      return true;
    };

    parser.on('file', (field, stream, info) => {
      if (!claimName(field)) return void stream.resume();
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => {
        count(chunk.length);
        if (!settled) chunks.push(chunk);
      });
      stream.on('limit', () => fail(tooLarge(limitBytes)));
      stream.on('end', () => {
        if (settled) return;
        body.files.set(field, { field, filename: info.filename, contentType: info.mimeType, bytes: Buffer.concat(chunks) });
      });
    });
    parser.on('field', (field, value, info) => {
      count(Buffer.byteLength(value));
      if (info.valueTruncated) return fail(tooLarge(limitBytes));
      if (info.nameTruncated) return fail(validation('A multipart field name is too long'));
      if (claimName(field)) body.fields.set(field, value);
    });
    parser.on('partsLimit', () => fail(new DomainError('payload_too_large', `At most ${maxParts} parts are accepted`)));
    parser.on('error', (error: Error) => fail(validation(`Malformed multipart body: ${error.message}`)));
    parser.on('close', () => {
      if (settled) return;
      settled = true;
      resolve(body);
    });
    req.on('aborted', () => fail(validation('The upload was aborted')));
    req.pipe(parser);
  });
}
