import { fromBase64, toBase64 } from './binary.js';
import type { FileData } from './multipart.js';
import type { KeyValueStore } from './storage/keyValue.js';

/**
 * Where photos and signatures wait until they are sent. The outbox keeps only their id: an
 * attachment is written once when the action is queued, read only to send it, and removed
 * once the service has it, so memory does not grow with the number of waiting photos.
 */
export interface AttachmentStore {
  /** Keeps `data` durably under `id`; resolves once it is stored. */
  put(id: string, data: FileData, contentType: string): Promise<void>;
  /** The data for a multipart part (bytes, a Blob or a file URI), or undefined when it is gone. */
  get(id: string): Promise<FileData | undefined>;
  delete(id: string): Promise<void>;
}

async function bytesOf(data: FileData): Promise<Uint8Array> {
  if (data instanceof Uint8Array) return data;
  if ('uri' in data) throw new Error('this attachment store takes bytes or Blobs; a file URI needs a store that copies files');
  return new Uint8Array(await data.arrayBuffer());
}

/** In memory: for tests and throwaway clients. */
export class MemoryAttachmentStore implements AttachmentStore {
  private readonly data = new Map<string, FileData>();
  async put(id: string, data: FileData) {
    this.data.set(id, data instanceof Uint8Array ? data.slice() : data);
  }
  async get(id: string) {
    return this.data.get(id);
  }
  async delete(id: string) {
    this.data.delete(id);
  }
}

const PREFIX = 'attachment/';

/**
 * In the key-value storage the outbox uses, as base64 under its own key: durable wherever the
 * outbox is, and out of the outbox entries. The default when the app names no attachment store.
 */
export class KeyValueAttachmentStore implements AttachmentStore {
  constructor(private readonly kv: KeyValueStore) {}
  async put(id: string, data: FileData) {
    await this.kv.set(`${PREFIX}${id}`, toBase64(await bytesOf(data)));
  }
  async get(id: string) {
    const text = await this.kv.get(`${PREFIX}${id}`);
    return text === undefined ? undefined : fromBase64(text);
  }
  delete(id: string) {
    return this.kv.delete(`${PREFIX}${id}`);
  }
}
