import type { Config } from '../../config.js';
import { createHttpDocumentStore } from './http.js';
import { createLocalDocumentStore } from './local.js';
import { createS3DocumentStore } from './s3.js';

export interface StoredDocument {
  bytes: Buffer;
  contentType: string;
}

export interface PreviewRequest {
  width: number;
  height: number;
  quality: number;
  format: 'png' | 'jpeg' | 'webp' | 'tiff';
  page: number;
}

export interface DocumentStore {
  /** Stores bytes; returns the store's reference, which starts with `~`. */
  put(bytes: Buffer, contentType: string, name?: string): Promise<string>;
  /** Throws DomainError not_found when the reference is unknown. */
  get(reference: string): Promise<StoredDocument>;
  /** A preview rendered by the store itself, when it offers one; undefined means "render it yourself". */
  preview?(reference: string, request: PreviewRequest): Promise<StoredDocument | undefined>;
  /** Releases what the store holds (the temporary directory of an ephemeral local store). */
  close?(): Promise<void>;
}

export function createDocumentStore(config: Config['documents'], dataDir: string | undefined): DocumentStore {
  if (config.mode === 'http') return createHttpDocumentStore({ url: config.url!, token: config.token });
  if (config.mode === 's3') return createS3DocumentStore(config.s3);
  return createLocalDocumentStore(dataDir);
}
