import type { KeyValueStore } from './keyValue.js';

const STORE = 'kv';

const done = <T>(request: IDBRequest<T>) => new Promise<T>((resolve, reject) => {
  request.onsuccess = () => resolve(request.result);
  request.onerror = () => reject(request.error);
});

/** The browser's IndexedDB as a KeyValueStore; a write resolves when its transaction commits. */
export class IndexedDbStore implements KeyValueStore {
  private constructor(private readonly db: IDBDatabase) {}

  static async open(name = 'tourline', factory: IDBFactory | undefined = globalThis.indexedDB): Promise<IndexedDbStore> {
    if (!factory) throw new Error('IndexedDB is not available here; pass an IDBFactory');
    const request = factory.open(name, 1);
    request.onupgradeneeded = () => {
      if (!request.result.objectStoreNames.contains(STORE)) request.result.createObjectStore(STORE);
    };
    return new IndexedDbStore(await done(request));
  }

  async get(key: string) {
    const value = await done(this.db.transaction(STORE, 'readonly').objectStore(STORE).get(key));
    return typeof value === 'string' ? value : undefined;
  }

  set(key: string, value: string) { return this.write((store) => store.put(value, key)); }
  delete(key: string) { return this.write((store) => store.delete(key)); }

  async keys(prefix = '') {
    // Filtered here rather than with IDBKeyRange, which an injected factory may not put on globalThis.
    const keys = await done(this.db.transaction(STORE, 'readonly').objectStore(STORE).getAllKeys());
    return (keys as string[]).filter((k) => k.startsWith(prefix)).sort();
  }

  async close() { this.db.close(); }

  private write(operation: (store: IDBObjectStore) => void) {
    // 'strict' durability asks the browser to flush to disk before reporting completion.
    const tx = this.db.transaction(STORE, 'readwrite', { durability: 'strict' });
    operation(tx.objectStore(STORE));
    return new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
    });
  }
}
