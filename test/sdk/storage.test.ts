import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { IDBFactory } from 'fake-indexeddb';
import { afterEach, describe, expect, it } from 'vitest';
import { FileStore } from '../../client-sdk/node.js';
import { IndexedDbStore } from '../../client-sdk/storage/indexedDb.js';
import { MemoryStore, type KeyValueStore } from '../../client-sdk/storage/keyValue.js';

const dirs: string[] = [];
async function tempDir() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tourline-sdk-'));
  dirs.push(dir);
  return dir;
}
afterEach(async () => {
  while (dirs.length) await rm(dirs.pop()!, { recursive: true, force: true });
});

interface Adapter {
  name: string;
  /** Opens a store; `reopen` gives a second handle on the same data (an app restart), where that means anything. */
  open(): Promise<{ store: KeyValueStore; reopen?: () => Promise<KeyValueStore> }>;
}

const adapters: Adapter[] = [
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
];

describe.each(adapters)('$name key-value store', (adapter) => {
  it('returns what was set, undefined for what was not, and nothing after delete', async () => {
    const { store } = await adapter.open();
    expect(await store.get('a')).toBeUndefined();
    await store.set('a', 'one');
    await store.set('a', 'two');
    expect(await store.get('a')).toBe('two');
    await store.delete('a');
    expect(await store.get('a')).toBeUndefined();
    await store.delete('never-there');
  });

  it('lists keys by prefix in ascending order, with slashes, dots and unicode in keys', async () => {
    const { store } = await adapter.open();
    for (const key of ['outbox/000000000002', 'outbox/000000000001', 'tour/ä.b', 'cursor']) await store.set(key, key);
    expect(await store.keys('outbox/')).toEqual(['outbox/000000000001', 'outbox/000000000002']);
    expect(await store.keys('tour/')).toEqual(['tour/ä.b']);
    expect(await store.get('tour/ä.b')).toBe('tour/ä.b');
    expect(await store.keys()).toHaveLength(4);
  });

  it('keeps the value of the last of many concurrent writes to one key', async () => {
    const { store } = await adapter.open();
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.set('k', String(i))));
    expect(await store.get('k')).toBe('19');
  });

  it('keeps everything across a reopen (an app restart)', async () => {
    const { store, reopen } = await adapter.open();
    if (!reopen) return expect(adapter.name).toBe('memory');
    await store.set('outbox/1', JSON.stringify({ id: 'x' }));
    await store.close?.();
    const again = await reopen();
    expect(await again.get('outbox/1')).toBe(JSON.stringify({ id: 'x' }));
    await again.close?.();
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

  it('never leaves a temp file behind after successful writes', async () => {
    const dir = await tempDir();
    const store = await FileStore.open(dir);
    await Promise.all(Array.from({ length: 10 }, (_, i) => store.set(`k${i % 3}`, 'x'.repeat(i * 1000))));
    await store.close();
    expect((await readdir(dir)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });
});
