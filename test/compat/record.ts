/**
 * Records the fixtures of a release: `npx tsx test/compat/record.ts 0.1.0`.
 *
 * Checks the release's commit (test/compat/releases.json) out into a temporary worktree, builds
 * its SDK, starts its service, and lets its SDK work the day of scenario.ts once per storage
 * layout (files with photos as files; SQLite with photos inside). Each layout's storage is kept
 * as the SDK left it with everything queued, then the SDK sends it and every request and answer
 * is recorded. A third storage is the outbox after the release's SDK met a 426 it did not know.
 */
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { openSqlJs, sqlJsDatabase } from '../sdk/sqlJs.js';
import { checkoutRelease, startService } from './checkout.js';
import { driveDay, setUp, TOUR_DATE, type SetUp } from './scenario.js';
import { fixtureDir, readReleases, type Fixtures, type RecordedRequest } from './fixtures.js';

const ADMIN_KEY = 'compat-admin-key-0123456789abcdef';

/** A fetch that keeps every change the SDK sends, and the service's answer. */
function recordingFetch(requests: RecordedRequest[]) {
  return async (input: string, init: RequestInit) => {
    const response = await fetch(input, init);
    const method = init.method ?? 'GET';
    if (method === 'GET') return response;
    const text = await response.clone().text();
    const url = new URL(input);
    const request: RecordedRequest = { method, path: url.pathname, status: response.status, answer: text ? JSON.parse(text) : null };
    if (init.body instanceof FormData) {
      request.form = [];
      for (const [name, value] of init.body as unknown as Iterable<[string, string | File]>) {
        if (typeof value === 'string') request.form.push({ name, value });
        else
          request.form.push({
            name,
            fileName: value.name,
            type: value.type,
            base64: Buffer.from(await value.arrayBuffer()).toString('base64'),
          });
      }
    } else if (typeof init.body === 'string') request.json = JSON.parse(init.body);
    requests.push(request);
    return response;
  };
}

const tooOld = async () =>
  new Response(
    JSON.stringify({
      type: 'https://tourline.dev/problems/client_too_old',
      title: 'Client too old',
      status: 426,
      detail: 'update the app',
      code: 'client_too_old',
      minimumVersion: '0.2.0',
    }),
    { status: 426, headers: { 'content-type': 'application/problem+json' } },
  );

async function main() {
  const version = process.argv[2];
  const release = readReleases().find((r) => r.version === version && r.commit);
  if (!release) throw new Error(`no release ${version} with a commit in test/compat/releases.json`);
  const { dir, remove } = checkoutRelease(release.commit!, { buildSdk: true });
  const work = await mkdtemp(path.join(tmpdir(), 'tourline-record-'));
  const { url, child } = await startService(dir, { DATA_DIR: path.join(work, 'data'), ADMIN_API_KEY: ADMIN_KEY });
  const out = fixtureDir(version);
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  try {
    const sdk = await import(pathToFileURL(path.join(dir, 'client-sdk/dist/index.js')).href);
    const node = await import(pathToFileURL(path.join(dir, 'client-sdk/dist/node.js')).href);
    const layouts = {
      files: async (at: string) => ({
        storage: await node.FileStore.open(path.join(at, 'kv')),
        attachments: await node.FileAttachmentStore.open(path.join(at, 'attachments')),
      }),
      sqlite: async (at: string) => {
        const file = path.join(at, 'outbox.sqlite');
        const db = await openSqlJs(await readFile(file).catch(() => undefined));
        const storage = await sdk.SqliteStore.open(sqlJsDatabase(db));
        // sql.js keeps the database in memory: the file is written when the app closes.
        return { storage: Object.assign(storage, { close: () => writeFile(file, db.export()) }) };
      },
    };
    const open = async (layout: keyof typeof layouts, at: string, token: string, fetch: unknown) =>
      sdk.TourlineClient.open({ baseUrl: url, getToken: () => token, fetch, webSocket: null, ...(await layouts[layout](at)) });

    const recordings: Partial<Fixtures['recordings']> = {};
    let personalnummer = 91_000;
    for (const layout of ['files', 'sqlite', 'refused'] as const) {
      const tag = `${version}-${layout}`;
      const day: SetUp = await setUp(url, ADMIN_KEY, ++personalnummer, tag);
      const at = path.join(work, layout);
      await mkdir(at, { recursive: true });
      const kind = layout === 'sqlite' ? 'sqlite' : 'files';
      const client = await open(kind, at, day.token, fetch);
      await client.loadTours({ date: TOUR_DATE });
      await driveDay(client, day.tour, day.master);
      await client.close();
      if (layout === 'refused') {
        // The release meets a service that no longer serves it: what it keeps is the fixture.
        const refused = await open(kind, at, day.token, tooOld);
        await refused.sync().catch(() => undefined);
        await refused.close();
      }
      await cp(at, path.join(out, layout), { recursive: true });
      if (layout === 'refused') {
        // Nothing was sent: the same day as `files` is what this outbox brings about.
        recordings[layout] = { tour: day.tour, master: day.master, requests: [], tourAfter: null };
        continue;
      }
      const requests: RecordedRequest[] = [];
      const sender = await open(kind, at, day.token, recordingFetch(requests));
      await sender.sync();
      await sender.sync();
      await sender.close();
      const after = await fetch(`${url}/tours/${day.tourId}`, { headers: { authorization: `Bearer ${day.token}` } });
      recordings[layout] = { tour: day.tour, master: day.master, requests, tourAfter: await after.json() };
    }
    await writeFile(
      path.join(out, 'recording.json'),
      `${JSON.stringify({ release: version, commit: release.commit, recordings }, null, 2)}\n`,
    );
  } finally {
    child.kill('SIGTERM');
    remove();
    await rm(work, { recursive: true, force: true });
  }
}

await main();
