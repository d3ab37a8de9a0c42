import type sharpModule from 'sharp';

let loaded: Promise<typeof sharpModule> | undefined;

/** sharp, loaded on first use: only uploads and previews need it, and loading it slows every start. */
export function loadSharp(): Promise<typeof sharpModule> {
  loaded ??= import('sharp').then((module) => module.default);
  return loaded;
}

/** What sharp reads of an image (format, size, pages), or undefined when the bytes are no image it knows. */
export async function imageMetadata(bytes: Buffer) {
  const sharp = await loadSharp();
  return sharp(bytes).metadata().catch(() => undefined);
}

/**
 * What sharp reads of an image whose pixels decode too, or undefined: a valid header over broken
 * pixel data passes `imageMetadata` and would fail every preview later.
 */
export async function decodableImage(bytes: Buffer) {
  const metadata = await imageMetadata(bytes);
  if (!metadata) return undefined;
  const sharp = await loadSharp();
  // A thumbnail reads every pixel (a JPEG only at the scale it needs) at a fraction of a preview's cost.
  return sharp(bytes).resize(64, 64, { fit: 'inside' }).toBuffer().then(() => metadata, () => undefined);
}

/** Larger signatures are refused: a decode costs four bytes a pixel, and a pen stroke needs no more. */
export const SIGNATURE_MAX_PIXELS = 4096 * 4096;

/**
 * A PNG decoded whole and encoded again as a plain 8-bit PNG, or undefined when the bytes are no
 * PNG that decodes (a valid header over broken pixel data passes `imageMetadata`, not this) or
 * have more than `maxPixels`. pdfkit reads only plain PNGs and throws out of a callback, which
 * ends the process, on anything it cannot read.
 */
export async function plainPng(bytes: Buffer, maxPixels = SIGNATURE_MAX_PIXELS): Promise<Buffer | undefined> {
  const sharp = await loadSharp();
  const image = sharp(bytes, { limitInputPixels: maxPixels });
  return image.metadata()
    .then((metadata) => (metadata.format === 'png' ? image.png().toBuffer() : undefined))
    .catch(() => undefined);
}
