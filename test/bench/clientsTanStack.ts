/**
 * TanStack DB's `@tanstack/offline-transactions` in the clients scenario. On Node it has no
 * storage of its own (IndexedDB or localStorage in browsers, AsyncStorage on React Native), so it
 * gets the custom `StorageAdapter` its docs describe, over better-sqlite3 (WAL, as the other two
 * open SQLite). Each action is one offline transaction on a local-only collection; its
 * mutationFn sends it to Tourline with its id as the idempotency key; the network comes and goes
 * through the `onlineDetector` option, and this process is always the leader (one "tab").
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { createCollection, localOnlyCollectionOptions } from '@tanstack/db';
import { NonRetriableError, startOfflineExecutor, type OnlineDetector, type StorageAdapter } from '@tanstack/offline-transactions';
import { newActionId, type Day, type DayFiles } from './clientsDay.js';
import type { Link } from './clientsLink.js';
import { Refused, sendActions, writeDurably, type BenchClient, type QueuedAction } from './clientsSend.js';

/** Keys in the order they were first stored: the executor replays ties of `createdAt` in that order. */
class SqliteStorageAdapter implements StorageAdapter {
  private readonly sqlite: Database.Database;
  /** Called once a value is stored: the scenario's measure of a durable enqueue. */
  onStored?: (key: string) => void;

  constructor(file: string) {
    this.sqlite = new Database(file);
    this.sqlite.pragma('journal_mode = WAL');
    this.sqlite.exec('CREATE TABLE IF NOT EXISTS outbox (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)');
  }
  async get(key: string) {
    const row = this.sqlite.prepare('SELECT value FROM outbox WHERE key = ?').get(key) as { value: string } | undefined;
    return row?.value ?? null;
  }
  async set(key: string, value: string) {
    this.sqlite
      .prepare('INSERT INTO outbox (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value')
      .run(key, value);
    this.onStored?.(key);
  }
  async delete(key: string) {
    this.sqlite.prepare('DELETE FROM outbox WHERE key = ?').run(key);
  }
  async keys() {
    return (this.sqlite.prepare('SELECT key FROM outbox ORDER BY rowid').all() as { key: string }[]).map((r) => r.key);
  }
  async clear() {
    this.sqlite.exec('DELETE FROM outbox');
  }
  close() {
    this.sqlite.close();
  }
}

/** Online as the scenario says; `notifyOnline` is what a platform's "online" event calls. */
class SwitchedOnline implements OnlineDetector {
  private readonly listeners = new Set<() => void>();
  constructor(public up: boolean) {}
  subscribe(callback: () => void) {
    this.listeners.add(callback);
    return () => this.listeners.delete(callback);
  }
  notifyOnline() {
    this.up = true;
    for (const listener of this.listeners) listener();
  }
  isOnline() {
    return this.up;
  }
  dispose() {
    this.listeners.clear();
  }
}

export async function openTanStack(dir: string, day: Day, files: DayFiles, link: Link, options: { online: boolean }): Promise<BenchClient> {
  const storage = new SqliteStorageAdapter(path.join(dir, 'tanstack.db'));
  const detector = new SwitchedOnline(options.online);
  const actions = createCollection(localOnlyCollectionOptions<QueuedAction, string>({ id: 'actions', getKey: (a) => a.id }));
  const service = { baseUrl: link.baseUrl, token: day.token, fetch: link.fetch };
  const refused: string[] = [];
  const executor = startOfflineExecutor({
    collections: { actions },
    storage,
    onlineDetector: detector,
    leaderElection: {
      requestLeadership: async () => true,
      releaseLeadership: () => undefined,
      isLeader: () => true,
      onLeadershipChange: () => () => undefined,
    },
    mutationFns: {
      send: async ({ transaction }) => {
        try {
          await sendActions(
            service,
            transaction.mutations.map((m) => m.modified as unknown as QueuedAction),
          );
        } catch (error) {
          if (!(error instanceof Refused)) throw error;
          refused.push(error.message);
          throw new NonRetriableError(error.message);
        }
      },
    },
  });
  await executor.waitForInit();
  const committed: Promise<unknown>[] = [];
  let photos = 0;
  return {
    async enqueue(action) {
      const id = newActionId();
      const entry: QueuedAction = { id, occurredAt: new Date().toISOString(), action };
      if (action.type === 'note') entry.noteId = newActionId();
      if (action.type === 'photo') entry.files = [await writeDurably(dir, `photo-${photos++}.jpg`, files.photo)];
      if (action.type === 'complete')
        entry.files = [
          await writeDurably(dir, `${id}-customer.png`, files.customerSignature),
          await writeDurably(dir, `${id}-driver.png`, files.driverSignature),
        ];
      const transaction = executor.createOfflineTransaction({ mutationFnName: 'send', autoCommit: false, idempotencyKey: id });
      const stored = new Promise<void>((resolve) => {
        storage.onStored = (key) => {
          if (key === `tx:${transaction.id}`) resolve();
        };
      });
      transaction.mutate(() => actions.insert(entry));
      // commit() resolves when the service has answered; durable is when the outbox holds it.
      committed.push(transaction.commit().catch((error: unknown) => refused.push(String(error))));
      await stored;
    },
    online: () => detector.notifyOnline(),
    async drained() {
      await Promise.all(committed);
      const deadline = Date.now() + 120_000;
      while (executor.getPendingCount() > 0 || executor.getRunningCount() > 0 || (await executor.peekOutbox()).length > 0) {
        if (Date.now() > deadline) throw new Error(`tanstack: ${executor.getPendingCount()} transactions still pending`);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      if (refused.length > 0) throw new Error(`tanstack: ${refused.length} refused, first ${refused[0]}`);
    },
    async close() {
      executor.dispose();
      storage.close();
    },
  };
}
