import { createHash } from 'node:crypto';
import path from 'node:path';
import { defineConfig, type Plugin } from 'vite';

const sdk = path.resolve(import.meta.dirname, '../../client-sdk');
/** The port `npm run driver-web` serves on; the service lets this origin in by default in development (CORS_ORIGINS). */
export const DRIVER_WEB_PORT = 5173;

/**
 * Writes `shell.json`, the files of the build the service worker caches at install (the app
 * shell), and a version that changes with them, so a new build replaces the old cache.
 */
function appShell(): Plugin {
  return {
    name: 'driver-web-shell',
    apply: 'build',
    generateBundle(_options, bundle) {
      const files = ['./', ...Object.keys(bundle).map((file) => `./${file}`)].sort();
      const version = createHash('sha256').update(files.join('\n')).digest('hex').slice(0, 12);
      this.emitFile({ type: 'asset', fileName: 'shell.json', source: JSON.stringify({ version, files }) });
    },
  };
}

export default defineConfig({
  root: import.meta.dirname,
  base: './',
  // The SDK through its package entry points, built from source here (no `npm run build` needed first).
  resolve: {
    alias: [
      { find: /^@tourline\/client\/indexeddb$/, replacement: `${sdk}/storage/indexedDb.ts` },
      { find: /^@tourline\/client\/react$/, replacement: `${sdk}/react.ts` },
      { find: /^@tourline\/client$/, replacement: `${sdk}/index.ts` },
    ],
  },
  oxc: { jsx: { runtime: 'automatic' } },
  plugins: [appShell()],
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022' },
  preview: { port: DRIVER_WEB_PORT, strictPort: true, host: 'localhost' },
  server: { port: DRIVER_WEB_PORT, strictPort: true, host: 'localhost' },
});
