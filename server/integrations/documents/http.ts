import { z } from 'zod';
import { notFound, upstream } from '../../errors.js';
import { requestIdHeader } from '../../observability/requestContext.js';
import type { DocumentStore, StoredDocument } from './store.js';

export interface HttpDocumentStoreOptions {
  url: string;
  token?: string;
  timeoutMs?: number;
}

const PutAnswer = z.object({ reference: z.string().startsWith('~') });

/**
 * A document store reached over HTTP (docs/completion-and-documents.md documents its API):
 * - `POST {url}/documents` with the raw bytes, `Content-Type`, optional `X-Document-Name`
 *   → 2xx `{ "reference": "~..." }`
 * - `GET {url}/documents/{reference}` → 200 bytes with their content type, 404 when unknown
 * - `GET {url}/documents/{reference}/preview?w=&h=&q=&ext=&page=` → 200 rendered image;
 *   404, 405 or 501 mean the store renders no previews and we render them ourselves.
 * Every request carries `Authorization: Bearer {token}` when a token is configured.
 */
export function createHttpDocumentStore(options: HttpDocumentStoreOptions): DocumentStore {
  const base = options.url.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 30_000;
  const documentUrl = (reference: string) => `${base}/documents/${encodeURIComponent(reference)}`;

  async function call(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (options.token) headers.set('authorization', `Bearer ${options.token}`);
    for (const [name, value] of Object.entries(requestIdHeader())) headers.set(name, value);
    try {
      return await fetch(url, { ...init, headers, signal: AbortSignal.timeout(timeoutMs) });
    } catch (error) {
      throw upstream(`Document store unreachable: ${(error as Error).message}`);
    }
  }

  async function readDocument(response: Response): Promise<StoredDocument> {
    return {
      bytes: Buffer.from(await response.arrayBuffer()),
      contentType: response.headers.get('content-type') ?? 'application/octet-stream',
    };
  }

  return {
    async put(bytes, contentType, name) {
      const headers: Record<string, string> = { 'content-type': contentType };
      if (name) headers['x-document-name'] = encodeURIComponent(name);
      const response = await call(`${base}/documents`, { method: 'POST', headers, body: new Uint8Array(bytes) });
      if (!response.ok) throw upstream(`Document store refused the upload with ${response.status}`);
      const answer = PutAnswer.safeParse(await response.json().catch(() => undefined));
      if (!answer.success) throw upstream('Document store answered the upload without a ~ reference');
      return answer.data.reference;
    },
    async get(reference) {
      const response = await call(documentUrl(reference));
      if (response.status === 404) throw notFound('Document');
      if (!response.ok) throw upstream(`Document store answered ${response.status}`);
      return readDocument(response);
    },
    async preview(reference, request) {
      const query = new URLSearchParams({
        w: String(request.width),
        h: String(request.height),
        q: String(request.quality),
        ext: request.format,
        page: String(request.page),
      });
      const response = await call(`${documentUrl(reference)}/preview?${query}`);
      if ([404, 405, 501].includes(response.status)) return undefined;
      if (!response.ok) throw upstream(`Document store preview answered ${response.status}`);
      return readDocument(response);
    },
  };
}
