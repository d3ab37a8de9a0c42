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
