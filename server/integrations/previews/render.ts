import { DomainError } from '../../errors.js';
import { imageMetadata, loadSharp } from '../images.js';
import type { PreviewRequest, StoredDocument } from '../documents/store.js';
import type { PdfRasterizer } from './pdfRaster.js';

export const previewContentTypes: Record<PreviewRequest['format'], string> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  tiff: 'image/tiff',
};

// PDF pages are rasterized at most at this resolution; that is their "original size" for previews.
const PDF_MAX_DPI = 200;

// A page the document does not have is a resource that is not there: the spec's errors for previews are 401 and 404.
const pageOutOfRange = (page: number, pages: number) =>
  new DomainError('not_found', `The document has ${pages} page${pages === 1 ? '' : 's'}; page ${page} does not exist`, [
    { path: 'query.page', message: `must be between 1 and ${pages}` },
  ]);

const isPdf = (document: StoredDocument) =>
  document.contentType === 'application/pdf' || document.bytes.subarray(0, 5).toString('latin1') === '%PDF-';

/** Rasterizes one PDF page (1-based) on the worker thread, no larger than needed for the requested box. */
async function rasterizePdfPage(
  rasterizer: PdfRasterizer,
  bytes: Buffer,
  request: PreviewRequest,
): Promise<{ png: Buffer; width: number; height: number }> {
  const result = await rasterizer.rasterize({
    bytes,
    page: request.page,
    width: request.width,
    height: request.height,
    maxDpi: PDF_MAX_DPI,
  });
  if ('pages' in result) throw pageOutOfRange(request.page, result.pages);
  return { png: Buffer.from(result.png), width: result.width, height: result.height };
}

/** No preview is larger on a side, whatever the box: a screen's worth, above an A4 page at 200 dpi (2339), within every format's limit. */
export const PREVIEW_MAX_SIDE = 2560;

/**
 * The size of a preview of a `width` x `height` image: inside the box (0 leaves that side free),
 * aspect ratio kept, never enlarged, at most PREVIEW_MAX_SIDE and at least 1 pixel a side (an
 * image of 1 x 16777216 pixels has no other way to fit).
 */
export function previewSize(width: number, height: number, box: { width: number; height: number }) {
  const scale = Math.min(
    1,
    box.width ? box.width / width : 1,
    box.height ? box.height / height : 1,
    PREVIEW_MAX_SIDE / width,
    PREVIEW_MAX_SIDE / height,
  );
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/**
 * A preview of an image or of one PDF page: fit inside `width` x `height` (0 leaves that side
 * free), aspect ratio kept, never enlarged beyond the original, encoded as `format`. The size is
 * computed here, never left to sharp, so that no box (0, 2147483647) and no shape (1 x 16777216)
 * makes an encoder refuse it.
 */
export async function renderPreview(document: StoredDocument, request: PreviewRequest, rasterizer: PdfRasterizer): Promise<Buffer> {
  let input: Buffer;
  let page = 0;
  let size: { width: number; height: number };
  if (isPdf(document)) {
    const raster = await rasterizePdfPage(rasterizer, document.bytes, request);
    input = raster.png;
    size = raster;
  } else {
    const metadata = await imageMetadata(document.bytes);
    if (!metadata) throw new DomainError('internal', 'The attachment is not an image that can be previewed', undefined, 500);
    const pages = metadata.pages ?? 1;
    if (request.page > pages) throw pageOutOfRange(request.page, pages);
    input = document.bytes;
    page = request.page - 1;
    const frame = { width: metadata.width, height: metadata.pageHeight ?? metadata.height };
    // EXIF orientations 5 to 8 turn the image a quarter: `rotate()` below swaps its sides.
    size = (metadata.orientation ?? 1) >= 5 ? { width: frame.height, height: frame.width } : frame;
  }
  // sharp's encoders take quality 1..100; 0 asks for the smallest file and gets 1. PNG is lossless and ignores it.
  const quality = Math.max(1, request.quality);
  const sharp = await loadSharp();
  return sharp(input, { page })
    .rotate()
    .resize({ ...previewSize(size.width, size.height, { width: request.width, height: request.height }), fit: 'fill' })
    .toFormat(request.format, request.format === 'png' ? {} : { quality })
    .toBuffer();
}
