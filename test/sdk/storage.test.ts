import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { IDBFactory } from 'fake-indexeddb';
import { afterEach, describe, expect, it } from 'vitest';
import { KeyValueAttachmentStore, MemoryAttachmentStore, type AttachmentStore } from '../../client-sdk/attachments.js';
import { FileAttachmentStore, FileStore } from '../../client-sdk/node.js';
import { attachmentStoreContract, keyValueStoreContract, type Opened } from '../../client-sdk/storage/contract.js';
import { IndexedDbAttachmentStore, IndexedDbStore } from '../../client-sdk/storage/indexedDb.js';
import { MemoryStore, type KeyValueStore } from '../../client-sdk/storage/keyValue.js';
import { SqliteStore } from '../../client-sdk/storage/sqlite.js';
import { openSqlJs, sqlJsDatabase } from './sqlJs.js';

const dirs: string[] = [];
async function tempDir() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tourline-sdk-'));
  dirs.push(dir);
  return dir;
}
afterEach(async () => {
  while (dirs.length) await rm(dirs.pop()!, { recursive: true, force: true });
});

/** Every key-value store the package ships, each opened fresh; `reopen` reads the same data again. */
const stores: { name: string; open: () => Promise<Opened<KeyValueStore>> }[] = [
  { name: 'memory', open: async () => ({ store: new MemoryStore() }) },
  {
    name: 'IndexedDB (fake-indexeddb)',
    open: async () => {
      const factory = new IDBFactory();
      return { store: await IndexedDbStore.open('tourline-test', factory), reopen: () => IndexedDbStore.open('tourline-test', factory) };
    },
  },
  {
    name: 'file store',
    open: async () => {
      const dir = await tempDir();
      return { store: await FileStore.open(dir), reopen: () => FileStore.open(dir) };
    },
  },
  {
    name: 'SQLite (sql.js)',
    open: async () => {
      const db = await openSqlJs();
      // Reopening the database file's bytes, as an app restart opens the file.
      return {
        store: await SqliteStore.open(sqlJsDatabase(db)),
        reopen: async () => SqliteStore.open(sqlJsDatabase(await openSqlJs(db.export()))),
      };
    },
  },
  {
    name: 'a store without batches (the SDK writes key by key)',
    open: async () => {
      const { get, set, delete: remove, keys } = bind(new MemoryStore());
      return { store: { get, set, delete: remove, keys } };
    },
  },
];

function bind(store: MemoryStore): KeyValueStore {
  return {
    get: (k) => store.get(k),
    set: (k, v) => store.set(k, v),
    delete: (k) => store.delete(k),
    keys: (p) => store.keys(p),
    batch: (w) => store.batch(w),
  };
}

describe.each(stores)('the key-value store contract: $name', ({ open }) => {
  it.each(keyValueStoreContract)('$name', (check) => check.run(open));
});

const attachmentStores: { name: string; open: () => Promise<Opened<AttachmentStore>> }[] = [
  { name: 'memory', open: async () => ({ store: new MemoryAttachmentStore() }) },
  {
    name: 'in the key-value store',
    open: async () => {
      const kv = new MemoryStore();
      return { store: new KeyValueAttachmentStore(kv), reopen: async () => new KeyValueAttachmentStore(kv) };
    },
  },
  {
    name: 'files',
    open: async () => {
      const dir = await tempDir();
      return { store: await FileAttachmentStore.open(dir), reopen: () => FileAttachmentStore.open(dir) };
    },
  },
  {
    name: 'IndexedDB (fake-indexeddb)',
    open: async () => {
      const factory = new IDBFactory();
      return {
        store: await IndexedDbAttachmentStore.open('tourline-test', factory),
        reopen: () => IndexedDbAttachmentStore.open('tourline-test', factory),
      };
    },
  },
];

describe.each(attachmentStores)('the attachment store contract: $name', ({ open }) => {
  it.each(attachmentStoreContract)('$name', (check) => check.run(open));
});

describe('the contract', () => {
  it('fails a store that loses a key of a batch', async () => {
    const store = new MemoryStore();
    const lossy: KeyValueStore = { ...bind(store), batch: (writes) => store.batch(writes.filter((_, i) => i % 2 === 0)) };
    const check = keyValueStoreContract.find((c) => c.name.includes('batch'))!;
    await expect(check.run(async () => ({ store: lossy }))).rejects.toThrow(/keys written by the batch/);
  });

  it('fails a store that lists keys in the wrong order or matches a prefix as a pattern', async () => {
    const store = new MemoryStore();
    const unsorted: KeyValueStore = {
      ...bind(store),
      keys: async (prefix = '') => (await store.keys()).filter((k) => k.replace(/[%_]/g, '/').startsWith(prefix)).reverse(),
    };
    const check = keyValueStoreContract.find((c) => c.name.includes('prefix'))!;
    await expect(check.run(async () => ({ store: unsorted }))).rejects.toThrow(/keys under outbox\//);
  });
});

describe('file store crash safety', () => {
  it('ignores and removes a torn temp file left by a crash during a write, keeping the previous value', async () => {
    const dir = await tempDir();
    const store = await FileStore.open(dir);
    await store.set('outbox/1', '{"state":"pending"}');
    // A crash after writing half of the next version, before the rename.
    const [file] = await readdir(dir);
    await writeFile(path.join(dir, `${file}.abc123.tmp`), '{"state":"rej');
    const reopened = await FileStore.open(dir);
    expect(await reopened.get('outbox/1')).toBe('{"state":"pending"}');
    expect(await reopened.keys()).toEqual(['outbox/1']);
    expect((await readdir(dir)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('never leaves a temp file behind after successful writes and batches', async () => {
    const dir = await tempDir();
    const store = await FileStore.open(dir);
    await Promise.all(Array.from({ length: 10 }, (_, i) => store.set(`k${i % 3}`, 'x'.repeat(i * 1000))));
    await store.batch(Array.from({ length: 10 }, (_, i) => ({ key: `b${i % 4}`, value: String(i) })));
    await store.close();
    expect((await readdir(dir)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    expect(await store.get('b1')).toBe('9');
  });
});

describe('SQLite store', () => {
  it('writes a batch in one transaction: a failing statement leaves nothing of it', async () => {
    const db = await openSqlJs();
    const store = await SqliteStore.open(sqlJsDatabase(db));
    await store.set('kept', 'before');
    db.run("CREATE TRIGGER refuse BEFORE INSERT ON tourline_kv WHEN NEW.key = 'poison' BEGIN SELECT RAISE(ABORT, 'refused'); END");
    await expect(
      store.batch([
        { key: 'kept', value: 'after' },
        { key: 'new', value: 'x' },
        { key: 'poison', value: 'x' },
      ]),
    ).rejects.toThrow(/refused/);
    expect([await store.get('kept'), await store.get('new')]).toEqual(['before', undefined]);
  });
});
