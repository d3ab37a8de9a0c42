import type sharpModule from 'sharp';

let loaded: Promise<typeof sharpModule> | undefined;

/** sharp, loaded on first use: only uploads and previews need it, and loading it slows every start. */
export function loadSharp(): Promise<typeof sharpModule> {
  loaded ??= import('sharp').then((module) => module.default);
  return loaded;
}

/**
 * What the header of an image states (format, size, pages), or undefined when the bytes are no
 * image sharp knows. Nothing is decoded, so sharp's own pixel limit is not applied: an image
 * beyond it is one that is too large, not one that is no image (see `withinImageLimits`).
 */
export async function imageMetadata(bytes: Buffer) {
  const sharp = await loadSharp();
  return sharp(bytes, { limitInputPixels: false })
    .metadata()
    .catch(() => undefined);
}

/** Larger images are refused (signatures and note images): a decode costs four bytes a pixel, and a photo of a note needs no more. */
export const IMAGE_MAX_PIXELS = 4096 * 4096;
/** Longer sides are refused too: libvips pays per row and per tile, so 1 x 16777216 pixels would take half a minute to decode. */
export const IMAGE_MAX_SIDE = 16_384;

/** Whether the first frame of an image (the one sharp decodes), as its header states it, is within both limits. */
export function withinImageLimits(metadata: { width: number; height: number; pageHeight?: number }, maxPixels = IMAGE_MAX_PIXELS): boolean {
  const height = metadata.pageHeight ?? metadata.height;
  return metadata.width * height <= maxPixels && metadata.width <= IMAGE_MAX_SIDE && height <= IMAGE_MAX_SIDE;
}

export type ImageCheck = { ok: true; format: string } | { ok: false; reason: 'not_an_image' | 'too_many_pixels' };

/**
 * Whether the bytes are an image of at most `maxPixels` whose pixels decode too: the size is read
 * from the header before anything is decoded, and a valid header over broken pixel data passes
 * `imageMetadata` but would fail every preview later.
 */
export async function checkImage(bytes: Buffer, maxPixels = IMAGE_MAX_PIXELS): Promise<ImageCheck> {
  const metadata = await imageMetadata(bytes);
  if (!metadata) return { ok: false, reason: 'not_an_image' };
  if (!withinImageLimits(metadata, maxPixels)) return { ok: false, reason: 'too_many_pixels' };
  const sharp = await loadSharp();
  // A thumbnail reads every pixel (a JPEG only at the scale it needs) at a fraction of a preview's cost.
  return sharp(bytes, { limitInputPixels: maxPixels })
    .resize(64, 64, { fit: 'inside' })
    .toBuffer()
    .then(
      () => ({ ok: true as const, format: metadata.format }),
      () => ({ ok: false as const, reason: 'not_an_image' as const }),
    );
}

/**
 * A PNG decoded whole and encoded again as a plain 8-bit PNG, or undefined when the bytes are no
 * PNG that decodes (a valid header over broken pixel data passes `imageMetadata`, not this) or
 * are beyond `maxPixels` or IMAGE_MAX_SIDE. pdfkit reads only plain PNGs and throws out of a callback, which
 * ends the process, on anything it cannot read.
 */
export async function plainPng(bytes: Buffer, maxPixels = IMAGE_MAX_PIXELS): Promise<Buffer | undefined> {
  const sharp = await loadSharp();
  const image = sharp(bytes, { limitInputPixels: maxPixels });
  return image
    .metadata()
    .then((metadata) => (metadata.format === 'png' && withinImageLimits(metadata, maxPixels) ? image.png().toBuffer() : undefined))
    .catch(() => undefined);
}
