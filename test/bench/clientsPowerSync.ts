/**
 * PowerSync's upload queue (`@powersync/node`) in the clients scenario: each action is one
 * insert into an insert-only table (the docs' kind for a log of writes: it goes to the `ps_crud`
 * queue and is kept nowhere else), on the SDK's own SQLite (better-sqlite3 in its workers, WAL).
 * `uploadData` is the connector's, as the docs write it with `getCrudBatch`. There is no
 * PowerSync service, and `connect()` would open its sync stream against one, so the scenario
 * runs what `connect()` runs for uploads: `uploadData` again while `ps_crud` holds an entry.
 */
import { Worker } from 'node:worker_threads';
import { column, PowerSyncDatabase, Schema, Table, type AbstractPowerSyncDatabase, type PowerSyncBackendConnector } from '@powersync/node';
import { newActionId, type Day, type DayAction, type DayFiles } from './clientsDay.js';
import type { Link } from './clientsLink.js';
import { Refused, sendActions, writeDurably, type BenchClient, type QueuedAction } from './clientsSend.js';

const schema = new Schema({
  actions: new Table(
    { occurred_at: column.text, type: column.text, action: column.text, note_id: column.text, files: column.text },
    { insertOnly: true },
  ),
});

/** The most one push takes. */
const BATCH = 500;

function connector(service: { baseUrl: string; token: string; fetch: typeof fetch }, refused: string[]): PowerSyncBackendConnector {
  return {
    // Never called: nothing connects to a PowerSync service.
    fetchCredentials: async () => null,
    async uploadData(database: AbstractPowerSyncDatabase) {
      const batch = await database.getCrudBatch(BATCH);
      if (!batch) return;
      const queued = batch.crud.map((entry): QueuedAction => ({
        id: entry.id,
        occurredAt: String(entry.opData!.occurred_at),
        action: JSON.parse(String(entry.opData!.action)) as DayAction,
        noteId: (entry.opData!.note_id as string | null) ?? undefined,
        files: entry.opData!.files ? (JSON.parse(String(entry.opData!.files)) as string[]) : undefined,
      }));
      try {
        await sendActions(service, queued);
      } catch (error) {
        // The docs' advice: a refusal the service will repeat is dropped, or the queue stops behind it.
        if (!(error instanceof Refused)) throw error;
        refused.push(error.message);
      }
      await batch.complete();
    },
  };
}

export async function openPowerSync(
  dir: string,
  day: Day,
  files: DayFiles,
  link: Link,
  options: { online: boolean },
): Promise<BenchClient> {
  const db = new PowerSyncDatabase({
    schema,
    database: {
      dbFilename: 'powersync.db',
      dbLocation: dir,
      // Its workers run the package's plain JavaScript: without this they would inherit the bench's
      // TypeScript loader (tsx) and start seconds slower than in an app.
      openWorker: (url, options) => new Worker(url, { ...options, execArgv: [] }),
    },
  });
  await db.init();
  const refused: string[] = [];
  const upload = connector({ baseUrl: link.baseUrl, token: day.token, fetch: link.fetch }, refused);
  let uploading: Promise<void> | undefined;
  // What the SDK's upload loop does while connected: upload until the queue is empty, retry after a failure.
  const uploadAll = async () => {
    while (await db.getCrudBatch(1)) {
      try {
        await upload.uploadData(db);
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  };
  const start = () => (uploading ??= uploadAll().finally(() => (uploading = undefined)));
  if (options.online) void start();
  let photos = 0;
  return {
    async enqueue(action) {
      const id = newActionId();
      let stored: string[] | null = null;
      if (action.type === 'photo') stored = [await writeDurably(dir, `photo-${photos++}.jpg`, files.photo)];
      if (action.type === 'complete')
        stored = [
          await writeDurably(dir, `${id}-customer.png`, files.customerSignature),
          await writeDurably(dir, `${id}-driver.png`, files.driverSignature),
        ];
      await db.execute('INSERT INTO actions (id, occurred_at, type, action, note_id, files) VALUES (?, ?, ?, ?, ?, ?)', [
        id,
        new Date().toISOString(),
        action.type,
        JSON.stringify(action),
        action.type === 'note' ? newActionId() : null,
        stored && JSON.stringify(stored),
      ]);
    },
    online: () => void start(),
    async drained() {
      const deadline = Date.now() + 120_000;
      while (uploading || (await db.getCrudBatch(1))) {
        if (Date.now() > deadline) throw new Error('powersync: the upload queue did not empty');
        await (uploading ?? new Promise((resolve) => setTimeout(resolve, 2)));
      }
      if (refused.length > 0) throw new Error(`powersync: ${refused.length} refused, first ${refused[0]}`);
    },
    async close() {
      await uploading;
      await db.close();
    },
  };
}
