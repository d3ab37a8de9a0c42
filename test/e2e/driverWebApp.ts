import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import type { Page } from 'puppeteer-core';
import { build } from 'vite';

const root = path.resolve(import.meta.dirname, '../..');
const types: Record<string, string> = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
};

/** Builds examples/driver-web with its own Vite config into `outDir`, as `npm run driver-web` does. */
export async function buildDriverWeb(outDir: string) {
  await build({
    configFile: path.join(root, 'examples/driver-web/vite.config.ts'),
    build: { outDir, emptyOutDir: true },
    logLevel: 'silent',
  });
}

/** A static file server of the built app; `close()` takes it away, so only the service worker can serve the shell. */
export async function serveStatic(dir: string) {
  const server = http.createServer(async (req, res) => {
    const pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const file = path.join(dir, pathname.endsWith('/') ? `${pathname}index.html` : pathname);
    if (!file.startsWith(dir) || !(await stat(file).catch(() => null))?.isFile()) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-cache' });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** What breaks a phone layout: the page wider than the screen, and controls smaller than 44 px or hidden behind others. */
export function layoutProblems(page: Page): Promise<string[]> {
  return page.evaluate(async () => {
    const problems: string[] = [];
    if (document.documentElement.scrollWidth > innerWidth)
      problems.push(`horizontal scrolling: ${document.documentElement.scrollWidth} > ${innerWidth}`);
    const controls = Array.from(
      document.querySelectorAll<HTMLElement>(
        'button, select, textarea, input:not([type=checkbox]):not([type=file]), label.file, label.check',
      ),
    );
    for (const control of controls) {
      control.scrollIntoView({ block: 'center', inline: 'nearest' });
      await new Promise((resolve) => requestAnimationFrame(resolve));
      const box = control.getBoundingClientRect();
      const name = `${control.tagName.toLowerCase()} "${(control.textContent || control.getAttribute('aria-label') || '').trim().slice(0, 30)}"`;
      if (box.height < 44 || box.width < 44) problems.push(`${name} is ${Math.round(box.width)}×${Math.round(box.height)} px`);
      if (box.left < 0 || box.right > innerWidth) problems.push(`${name} sticks out of the screen`);
      const top = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
      if (!top || !(control === top || control.contains(top))) problems.push(`${name} is covered`);
    }
    scrollTo(0, 0);
    return problems;
  });
}
