import { DomainError } from '../../errors.js';
import { imageMetadata, loadSharp } from '../images.js';
import type { PreviewRequest, StoredDocument } from '../documents/store.js';

export const previewContentTypes: Record<PreviewRequest['format'], string> = {
  png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp', tiff: 'image/tiff',
};

// PDF pages are rasterized at most at this resolution; that is their "original size" for previews.
const PDF_MAX_DPI = 200;

// A page the document does not have is a resource that is not there: the spec's errors for previews are 401 and 404.
const pageOutOfRange = (page: number, pages: number) => new DomainError('not_found',
  `The document has ${pages} page${pages === 1 ? '' : 's'}; page ${page} does not exist`, [{ path: 'query.page', message: `must be between 1 and ${pages}` }]);

const isPdf = (document: StoredDocument) =>
  document.contentType === 'application/pdf' || document.bytes.subarray(0, 5).toString('latin1') === '%PDF-';

/** Rasterizes one PDF page (1-based) with mupdf, no larger than needed for the requested box. */
async function rasterizePdfPage(bytes: Buffer, request: PreviewRequest): Promise<{ png: Buffer; width: number; height: number }> {
  // Loaded on first use: the WASM module takes a moment to instantiate.
  const mupdf = await import('mupdf');
  const document = mupdf.Document.openDocument(bytes, 'application/pdf');
  try {
    const pages = document.countPages();
    if (request.page > pages) throw pageOutOfRange(request.page, pages);
    const page = document.loadPage(request.page - 1);
    try {
      const [x0, y0, x1, y1] = page.getBounds();
      const scale = Math.min(
        PDF_MAX_DPI / 72,
        request.width ? request.width / (x1 - x0) : Infinity,
        request.height ? request.height / (y1 - y0) : Infinity,
      );
      const pixmap = page.toPixmap(mupdf.Matrix.scale(scale, scale), mupdf.ColorSpace.DeviceRGB, false);
      try {
        return { png: Buffer.from(pixmap.asPNG()), width: pixmap.getWidth(), height: pixmap.getHeight() };
      } finally {
        pixmap.destroy();
      }
    } finally {
      page.destroy();
    }
  } finally {
    document.destroy();
  }
}

/**
 * A preview of an image or of one PDF page: fit inside `width` x `height` (0 leaves that side
 * free), aspect ratio kept, never enlarged beyond the original, encoded as `format`.
 */
export async function renderPreview(document: StoredDocument, request: PreviewRequest): Promise<Buffer> {
  let input: Buffer;
  let page = 0;
  let largestSide: number;
  if (isPdf(document)) {
    const raster = await rasterizePdfPage(document.bytes, request);
    input = raster.png;
    largestSide = Math.max(raster.width, raster.height);
  } else {
    const metadata = await imageMetadata(document.bytes);
    if (!metadata) throw new DomainError('internal', 'The attachment is not an image that can be previewed', undefined, 500);
    const pages = metadata.pages ?? 1;
    if (request.page > pages) throw pageOutOfRange(request.page, pages);
    input = document.bytes;
    page = request.page - 1;
    largestSide = Math.max(metadata.width ?? 1, metadata.height ?? 1);
  }
  // Nothing is enlarged, so a box beyond the largest side is the same as the largest side (and sharp refuses huge sizes).
  const bound = (side: number) => (side ? Math.min(side, largestSide) : undefined);
  // sharp's encoders take quality 1..100; 0 asks for the smallest file and gets 1. PNG is lossless and ignores it.
  const quality = Math.max(1, request.quality);
  const sharp = await loadSharp();
  return sharp(input, { page })
    .rotate()
    .resize({ width: bound(request.width), height: bound(request.height), fit: 'inside', withoutEnlargement: true })
    .toFormat(request.format, request.format === 'png' ? {} : { quality })
    .toBuffer();
}
