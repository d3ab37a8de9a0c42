import { createHash } from 'node:crypto';
import type { DocumentStore, PreviewRequest } from '../documents/store.js';
import { createPdfRasterizer } from './pdfRaster.js';
import { previewContentTypes, renderPreview } from './render.js';

// Bump when rendering changes, so clients drop previews they cached under the old ETag.
const RENDERER_VERSION = 2;

export interface Preview {
  bytes: Buffer;
  contentType: string;
  etag: string;
}

export interface PreviewService {
  /** The ETag of a preview; attachments never change, so it depends only on the id and the parameters. */
  etag(attachmentId: string, request: PreviewRequest): string;
  render(attachment: { id: string; reference: string }, request: PreviewRequest): Promise<Preview>;
  /** How many previews were rendered (not served from the cache); tests read it. */
  readonly renders: number;
  /** Stops the PDF worker thread. */
  close(): Promise<void>;
}

/** A least-recently-used cache bounded by total bytes. */
function lruCache<V extends { bytes: Buffer }>(maxBytes: number) {
  const entries = new Map<string, V>();
  let size = 0;
  return {
    get(key: string) {
      const value = entries.get(key);
      if (value) {
        entries.delete(key);
        entries.set(key, value);
      }
      return value;
    },
    set(key: string, value: V) {
      if (value.bytes.length > maxBytes) return;
      const previous = entries.get(key);
      if (previous) size -= previous.bytes.length;
      entries.delete(key);
      entries.set(key, value);
      size += value.bytes.length;
      for (const [oldest, old] of entries) {
        if (size <= maxBytes) break;
        entries.delete(oldest);
        size -= old.bytes.length;
      }
    },
  };
}

/**
 * Renders previews from the document store (the store's own preview when it offers one) and
 * keeps recent ones in memory; identical requests arriving together render once.
 */
export function createPreviewService(
  documents: DocumentStore,
  options: { cacheBytes: number } = { cacheBytes: 64 * 1024 * 1024 },
): PreviewService {
  const cache = lruCache<Preview>(options.cacheBytes);
  const inFlight = new Map<string, Promise<Preview>>();
  const rasterizer = createPdfRasterizer();
  let renders = 0;

  const etag = (attachmentId: string, r: PreviewRequest) => {
    const key = [RENDERER_VERSION, attachmentId, r.width, r.height, r.quality, r.format, r.page].join('|');
    return `"${createHash('sha256').update(key).digest('base64url').slice(0, 27)}"`;
  };

  async function produce(reference: string, request: PreviewRequest, tag: string): Promise<Preview> {
    renders += 1;
    const contentType = previewContentTypes[request.format];
    const fromStore = await documents.preview?.(reference, request);
    const bytes = fromStore?.bytes ?? (await renderPreview(await documents.get(reference), request, rasterizer));
    return { bytes, contentType, etag: tag };
  }

  return {
    etag,
    get renders() {
      return renders;
    },
    close: () => rasterizer.close(),
    async render(attachment, request) {
      const tag = etag(attachment.id, request);
      const cached = cache.get(tag);
      if (cached) return cached;
      let pending = inFlight.get(tag);
      if (!pending) {
        pending = produce(attachment.reference, request, tag)
          .then((preview) => {
            cache.set(tag, preview);
            return preview;
          })
          .finally(() => inFlight.delete(tag));
        inFlight.set(tag, pending);
      }
      return pending;
    },
  };
}
