import type { AttachmentStore } from '../attachments.js';
import type { FileData } from '../multipart.js';
import type { KeyValueStore, KeyValueWrite } from './keyValue.js';

const STORE = 'kv';
const ATTACHMENTS = 'attachments';

const done = <T>(request: IDBRequest<T>) =>
  new Promise<T>((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });

async function openDb(name: string, factory: IDBFactory | undefined, store: string) {
  if (!factory) throw new Error('IndexedDB is not available here; pass an IDBFactory');
  const request = factory.open(name, 1);
  request.onupgradeneeded = () => {
    if (!request.result.objectStoreNames.contains(store)) request.result.createObjectStore(store);
  };
  return done(request);
}

function write(db: IDBDatabase, store: string, operation: (store: IDBObjectStore) => void) {
  // 'strict' durability asks the browser to flush to disk before reporting completion.
  const tx = db.transaction(store, 'readwrite', { durability: 'strict' });
  operation(tx.objectStore(store));
  return new Promise<void>((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
  });
}

/** The browser's IndexedDB as a KeyValueStore; a write resolves when its transaction commits. */
export class IndexedDbStore implements KeyValueStore {
  /** Every tab of the origin opens the same database: the client coordinates with the others under this name. */
  readonly shared: string;

  private constructor(
    private readonly db: IDBDatabase,
    name: string,
  ) {
    this.shared = name;
  }

  static async open(name = 'tourline', factory: IDBFactory | undefined = globalThis.indexedDB): Promise<IndexedDbStore> {
    return new IndexedDbStore(await openDb(name, factory, STORE), name);
  }

  async get(key: string) {
    const value = await done(this.db.transaction(STORE, 'readonly').objectStore(STORE).get(key));
    return typeof value === 'string' ? value : undefined;
  }

  set(key: string, value: string) {
    return write(this.db, STORE, (store) => store.put(value, key));
  }
  delete(key: string) {
    return write(this.db, STORE, (store) => store.delete(key));
  }

  /** One transaction: all the writes commit together, or none. */
  batch(writes: KeyValueWrite[]) {
    return write(this.db, STORE, (store) => {
      for (const { key, value } of writes) {
        if (value === undefined) store.delete(key);
        else store.put(value, key);
      }
    });
  }

  async keys(prefix = '') {
    // Filtered here rather than with IDBKeyRange, which an injected factory may not put on globalThis.
    const keys = await done(this.db.transaction(STORE, 'readonly').objectStore(STORE).getAllKeys());
    return (keys as string[]).filter((k) => k.startsWith(prefix)).sort();
  }

  async close() {
    this.db.close();
  }
}

/** Photos and signatures as Blobs in IndexedDB (a database of their own, `<name>-attachments`). */
export class IndexedDbAttachmentStore implements AttachmentStore {
  private constructor(private readonly db: IDBDatabase) {}

  static async open(name = 'tourline', factory: IDBFactory | undefined = globalThis.indexedDB): Promise<IndexedDbAttachmentStore> {
    return new IndexedDbAttachmentStore(await openDb(`${name}-attachments`, factory, ATTACHMENTS));
  }

  put(id: string, data: FileData, contentType: string) {
    if ('uri' in data) throw new Error('IndexedDB keeps bytes or Blobs, not file URIs');
    const blob = data instanceof Uint8Array ? new Blob([data as Uint8Array<ArrayBuffer>], { type: contentType }) : data;
    return write(this.db, ATTACHMENTS, (store) => store.put(blob, id));
  }

  async get(id: string): Promise<FileData | undefined> {
    const value = await done(this.db.transaction(ATTACHMENTS, 'readonly').objectStore(ATTACHMENTS).get(id));
    return value ?? undefined;
  }

  delete(id: string) {
    return write(this.db, ATTACHMENTS, (store) => store.delete(id));
  }

  async close() {
    this.db.close();
  }
}
