// Rasterizes PDF pages with pdf.js on a worker thread, so that a large page never stalls the
// service's event loop. Plain JavaScript: the same file runs under tsx, vitest and the build.
import { createRequire } from 'node:module';
import path from 'node:path';
import { parentPort } from 'node:worker_threads';
import { createCanvas } from '@napi-rs/canvas';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';

const require = createRequire(import.meta.url);
// Fonts of PDFs that use the standard 14 without embedding them (pdfkit embeds its fonts).
const standardFontDataUrl = `${path.join(path.dirname(require.resolve('pdfjs-dist/package.json')), 'standard_fonts')}${path.sep}`;

async function rasterize({ bytes, page: pageNumber, width, height, maxDpi }) {
  const document = await getDocument({ data: new Uint8Array(bytes), standardFontDataUrl, isEvalSupported: false, verbosity: 0 }).promise;
  try {
    if (pageNumber > document.numPages) return { pages: document.numPages };
    const page = await document.getPage(pageNumber);
    const natural = page.getViewport({ scale: 1 });
    const scale = Math.min(maxDpi / 72, width ? width / natural.width : Infinity, height ? height / natural.height : Infinity);
    const viewport = page.getViewport({ scale });
    const canvas = createCanvas(Math.max(1, Math.round(viewport.width)), Math.max(1, Math.round(viewport.height)));
    const context = canvas.getContext('2d');
    // A page has no background of its own; paper is white.
    context.fillStyle = '#ffffff';
    context.fillRect(0, 0, canvas.width, canvas.height);
    await page.render({ canvas, canvasContext: context, viewport }).promise;
    const png = canvas.toBuffer('image/png');
    return { png, width: canvas.width, height: canvas.height };
  } finally {
    await document.destroy();
  }
}

parentPort.on('message', async ({ id, job }) => {
  try {
    const result = await rasterize(job);
    parentPort.postMessage({ id, result });
  } catch (error) {
    parentPort.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  }
});
