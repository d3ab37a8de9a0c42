import { mkdtemp, readdir, readFile, rm, writeFile, mkdir, cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore, TourlineClient, type KeyValueStore } from '../../client-sdk/index.js';
import { FileAttachmentStore, FileStore } from '../../client-sdk/node.js';
import { databaseKinds, type DatabaseKind } from '../helpers/databases.js';
import { TEST_ADMIN_KEY, useTestServer, type TestServer } from '../helpers/server.js';
import { openSqlJs, sqlJsDatabase } from '../sdk/sqlJs.js';
import { fixtureDir, readFixtures, readReleases, replayed, type Layout, type RecordedRequest } from './fixtures.js';
import { comparable, idMap, rewriteIds, setUp, type SetUp, type Tour } from './scenario.js';

const released = readReleases().filter((r) => r.fixtures);
const scratch = mkdtemp(path.join(tmpdir(), 'tourline-compat-'));
afterAll(async () => rm(await scratch, { recursive: true, force: true }));

type Results = { results: { status: string; code?: string }[] };

/** A recorded tour in the ids of the current service, for comparing. */
const mapped = (tour: Tour | null, ids: Map<string, string>) => comparable(JSON.parse(rewriteIds(JSON.stringify(tour), ids)));

/** The release's storage with the ids of the current service's tour, as the phone would hold it against that tour. */
async function copyStorage(version: string, layout: Layout, ids: Map<string, string>) {
  const from = path.join(fixtureDir(version), layout);
  const to = path.join(await scratch, `${layout}-${Math.random().toString(36).slice(2)}`);
  if (layout === 'sqlite') {
    const db = await openSqlJs(await readFile(path.join(from, 'outbox.sqlite')));
    const sql = sqlJsDatabase(db);
    const rows = await sql.query('SELECT key, value FROM tourline_kv');
    await sql.transaction([
      ['DELETE FROM tourline_kv', []],
      ...rows.map((r): [string, string[]] => [
        'INSERT INTO tourline_kv VALUES (?, ?)',
        [rewriteIds(String(r.key), ids), rewriteIds(String(r.value), ids)],
      ]),
    ]);
    return { storage: (await SqliteStore.open(sql)) as KeyValueStore };
  }
  await mkdir(path.join(to, 'kv'), { recursive: true });
  for (const name of await readdir(path.join(from, 'kv'))) {
    const text = await readFile(path.join(from, 'kv', name), 'utf8');
    await writeFile(path.join(to, 'kv', rewriteIds(name, ids)), rewriteIds(text, ids));
  }
  // Photos and signatures are bytes under the ids of their actions, which no service gave.
  await cp(path.join(from, 'attachments'), path.join(to, 'attachments'), { recursive: true });
  return { storage: await FileStore.open(path.join(to, 'kv')), attachments: await FileAttachmentStore.open(path.join(to, 'attachments')) };
}

async function send(api: TestServer, request: RecordedRequest, day: SetUp, ids: Map<string, string>) {
  const { path: target, body } = replayed(request, ids);
  return api.request(request.method, target, { token: day.token, body });
}

describe.each(released.map((r) => r.version))('the fixtures of release %s', (version) => {
  const fixtures = readFixtures(version);

  /**
   * A service of its own for each group of tests: the storages hold the event ids the recorded
   * requests carry, which a service that applied them on another tour refuses as used.
   */
  const onService = (kind: DatabaseKind) => {
    // The recorded events happened on the day they were recorded; their ids are remembered as long.
    const api = useTestServer(kind, { PROCESSED_EVENT_RETENTION_DAYS: '36500' });
    let personalnummer = 70_000 + Math.floor(Math.random() * 20_000);
    const day = async (layout: Layout) => {
      const current = await setUp(api.url, TEST_ADMIN_KEY, ++personalnummer, `${layout}-${personalnummer}`);
      return { current, ids: idMap(fixtures.recordings[layout], current) };
    };
    return { api, day };
  };

  describe.each(databaseKinds)('their requests on %s', (kind) => {
    const { api, day } = onService(kind);

    it.each(['files', 'sqlite'] as const)(
      "applies the %s day's requests with the results of the release, and a second time as duplicates",
      async (layout) => {
        const recording = fixtures.recordings[layout];
        const { current, ids } = await day(layout);
        for (const request of recording.requests) {
          const answer = await send(api, request, current, ids);
          expect(answer.status, `${request.method} ${request.path}`).toBe(request.status);
          expect(comparable(answer.body)).toMatchObject(mapped(request.answer as Tour, ids) as object);
        }
        const tour = (await api.get(`/tours/${current.tourId}`, { token: current.token })).body;
        expect(comparable(tour)).toEqual(mapped(recording.tourAfter, ids));
        for (const request of recording.requests) {
          const again = await send(api, request, current, ids);
          expect(again.status, `${request.method} ${request.path} again`).toBe(request.status);
          if (request.path !== '/sync/push') continue;
          const before = (request.answer as Results).results;
          expect((again.body as Results).results.map((r) => [r.status, r.code])).toEqual(before.map((r) => ['duplicate', r.code]));
        }
        expect(comparable((await api.get(`/tours/${current.tourId}`, { token: current.token })).body)).toEqual(comparable(tour));
      },
    );
  });

  describe.each(databaseKinds)('their storages on %s', (kind) => {
    const { api, day } = onService(kind);

    it.each(['files', 'sqlite', 'refused'] as const)(
      'the current SDK opens the %s storage and sends all it holds, once',
      async (layout) => {
        const { current, ids } = await day(layout);
        const client = await TourlineClient.open({
          baseUrl: api.url,
          getToken: () => current.token,
          webSocket: null,
          ...(await copyStorage(version, layout, ids)),
        });
        try {
          expect(client.status().pendingCount).toBe(31);
          await client.sync();
          await client.sync();
          expect(client.status(), JSON.stringify(client.status().rejected.map((r) => [r.message, r.errors]))).toMatchObject({
            pendingCount: 0,
            rejected: [{ type: 'scan', code: 'delivery_not_active' }],
          });
          const tour = (await api.get(`/tours/${current.tourId}`, { token: current.token })).body;
          const recorded = layout === 'refused' ? 'files' : layout;
          expect(comparable(tour)).toEqual(mapped(fixtures.recordings[recorded].tourAfter, idMap(fixtures.recordings[recorded], current)));
        } finally {
          await client.close();
        }
      },
    );
  });
});
