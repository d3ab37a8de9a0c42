/* global self, caches, fetch, URL, Response */
// The app shell's service worker: it caches the files of the build (listed in shell.json) at
// install, so the app opens without network. Only this origin's GET requests are answered here;
// the service's API is another origin and goes to the network as usual (the SDK queues offline).
const PREFIX = 'driver-web-shell-';

async function shell() {
  const response = await fetch('./shell.json', { cache: 'no-store' });
  return response.json();
}

self.addEventListener('install', (event) => {
  event.waitUntil(
    (async () => {
      const { version, files } = await shell();
      const cache = await caches.open(PREFIX + version);
      await cache.addAll(files.map((file) => new URL(file, self.registration.scope).href));
      await self.skipWaiting();
    })(),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      const { version } = await shell().catch(() => ({ version: null }));
      if (version)
        for (const name of await caches.keys()) if (name.startsWith(PREFIX) && name !== PREFIX + version) await caches.delete(name);
      await self.clients.claim();
    })(),
  );
});

// The network first, so a new build shows at once when online; the cached shell when it fails.
self.addEventListener('fetch', (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== 'GET' || url.origin !== self.location.origin) return;
  event.respondWith(
    (async () => {
      try {
        return await fetch(event.request);
      } catch (error) {
        const cached = await caches.match(event.request, { ignoreSearch: true });
        if (cached) return cached;
        if (event.request.mode === 'navigate') {
          const index = await caches.match(new URL('./', self.registration.scope).href);
          if (index) return index;
        }
        return Response.error();
      }
    })(),
  );
});
