import { Worker } from 'node:worker_threads';

export interface RasterJob {
  bytes: Buffer;
  page: number;
  width: number;
  height: number;
  maxDpi: number;
}
/** The page as PNG, or the document's page count when it has no such page. */
export type RasterResult = { png: Uint8Array; width: number; height: number } | { pages: number };

type Pending = { resolve: (result: RasterResult) => void; reject: (error: Error) => void };

/**
 * One worker thread rasterizes PDF pages with pdf.js (Apache-2.0), one job at a time in its own
 * event loop; started on first use, and again after it failed. Idle, it does not keep the
 * process alive.
 */
export function createPdfRasterizer() {
  let worker: Worker | undefined;
  let nextId = 0;
  const pending = new Map<number, Pending>();

  const failAll = (error: Error) => {
    for (const job of pending.values()) job.reject(error);
    pending.clear();
    worker = undefined;
  };

  function start() {
    const started = new Worker(new URL('./pdfWorker.mjs', import.meta.url));
    started.on('message', ({ id, result, error }: { id: number; result?: RasterResult; error?: string }) => {
      const job = pending.get(id);
      pending.delete(id);
      if (pending.size === 0) started.unref();
      if (error !== undefined) job?.reject(new Error(`PDF rendering failed: ${error}`));
      else job?.resolve(result!);
    });
    started.on('error', (error) => {
      if (worker === started) failAll(error);
    });
    started.on('exit', (code) => {
      if (worker === started) failAll(new Error(`The PDF worker stopped (${code})`));
    });
    return started;
  }

  return {
    rasterize(job: RasterJob): Promise<RasterResult> {
      worker ??= start();
      worker.ref();
      const id = nextId++;
      return new Promise<RasterResult>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker!.postMessage({ id, job });
      });
    },
    async close() {
      const stopping = worker;
      worker = undefined;
      await stopping?.terminate();
    },
  };
}

export type PdfRasterizer = ReturnType<typeof createPdfRasterizer>;
