/**
 * Tourline's SDK in the clients scenario: its outbox on `SqliteStore` over better-sqlite3 (WAL,
 * the engine and settings PowerSync's Node SDK opens), photos and signatures in its
 * `FileAttachmentStore`, sending on its own (`start()`), told of the network by `online()` and
 * `offline()` as the docs ask an app to.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { TourlineClient } from '../../client-sdk/index.js';
import { FileAttachmentStore } from '../../client-sdk/node.js';
import { SqliteStore, type SqlDatabase } from '../../client-sdk/storage/sqlite.js';
import type { Day, DayFiles } from './clientsDay.js';
import type { BenchClient } from './clientsSend.js';
import type { Link } from './clientsLink.js';

/** The glue the SDK's README shows for a SQLite driver, here better-sqlite3. */
function betterSqlite(file: string): { db: SqlDatabase; close: () => void } {
  const sqlite = new Database(file);
  sqlite.pragma('journal_mode = WAL');
  const db: SqlDatabase = {
    query: async (text, params = []) => {
      const statement = sqlite.prepare(text);
      if (statement.reader) return statement.all(...params) as Record<string, unknown>[];
      statement.run(...params);
      return [];
    },
    transaction: async (statements) =>
      sqlite.transaction(() => {
        for (const [text, params] of statements) sqlite.prepare(text).run(...params);
      })(),
  };
  return { db, close: () => sqlite.close() };
}

/**
 * `loadTour`: the day begins, the network there: the tour is read once, as an app does. Without
 * it the client opens on what its storage holds (a restart).
 */
export async function openTourline(
  dir: string,
  day: Day,
  files: DayFiles,
  link: Link,
  options: { online: boolean; loadTour: boolean },
): Promise<BenchClient> {
  const sqlite = betterSqlite(path.join(dir, 'tourline.db'));
  const client = await TourlineClient.open({
    baseUrl: link.baseUrl,
    getToken: () => day.token,
    fetch: link.fetch,
    webSocket: null,
    storage: await SqliteStore.open(sqlite.db),
    attachments: await FileAttachmentStore.open(path.join(dir, 'attachments')),
    // The peers report nothing of the device's health: the SDK's reports are left out of its requests too.
    healthReports: false,
  });
  if (options.loadTour) await client.loadTours({ date: day.tourDate });
  if (!options.online) client.offline();
  client.start();
  const outcomes: Promise<{ status: string }>[] = [];
  return {
    async enqueue(action) {
      let queued: { outcome: Promise<{ status: string }> };
      switch (action.type) {
        case 'scan':
          queued = await client.scan(action.itemId);
          break;
        case 'note':
          queued = await client.createNote(action.deliveryId, { text: action.text });
          break;
        case 'credit':
          queued = await client.setCredit(action.deliveryId, { amountCents: action.amountCents, reason: action.reason });
          break;
        case 'photo':
          queued = await client.createImageNote(action.deliveryId, { image: files.photo, text: action.text });
          break;
        case 'complete':
          queued = await client.complete(action.deliveryId, {
            customerSignature: files.customerSignature,
            driverSignature: files.driverSignature,
            acknowledgements: { receiptConfirmed: true, notesAcknowledged: true },
          });
          break;
      }
      outcomes.push(queued.outcome);
    },
    online: () => client.online(),
    async drained() {
      const settled = await Promise.all(outcomes);
      const refused = settled.filter((o) => o.status !== 'applied');
      if (refused.length > 0) throw new Error(`tourline: ${refused.length} actions refused`);
      // After a restart the handles of the last run are gone: what the outbox holds tells.
      const deadline = Date.now() + 120_000;
      while (client.status().pendingCount > 0 || client.rejected().length > 0) {
        if (client.rejected().length > 0) throw new Error(`tourline: refused ${client.rejected()[0].code}`);
        if (Date.now() > deadline) throw new Error(`tourline: ${client.status().pendingCount} actions still pending`);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    },
    async close() {
      await client.close();
      sqlite.close();
    },
  };
}
