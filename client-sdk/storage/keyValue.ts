/**
 * The storage the SDK needs: string values under string keys. An app backs it with whatever
 * it has (SQLite, AsyncStorage, MMKV); the SDK writes one key per outbox entry and per tour,
 * so every state change of an entry is a single-key write and needs no transaction.
 */
export interface KeyValueStore {
  get(key: string): Promise<string | undefined>;
  /** Resolves only once the value is durable. */
  set(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
  /** Keys starting with `prefix`, in ascending order. */
  keys(prefix?: string): Promise<string[]>;
  close?(): Promise<void>;
  /** Set by storage that other tabs of the app open too (IndexedDB): the name they coordinate under. */
  readonly shared?: string;
}

/** Keeps everything in memory: for tests, and for apps that accept losing the outbox on restart. */
export class MemoryStore implements KeyValueStore {
  private readonly data = new Map<string, string>();

  async get(key: string) { return this.data.get(key); }
  async set(key: string, value: string) { this.data.set(key, value); }
  async delete(key: string) { this.data.delete(key); }
  async keys(prefix = '') { return [...this.data.keys()].filter((k) => k.startsWith(prefix)).sort(); }
}

/** JSON on top of a KeyValueStore. */
export class JsonStore {
  constructor(readonly kv: KeyValueStore) {}

  async get<T>(key: string): Promise<T | undefined> {
    const raw = await this.kv.get(key);
    return raw === undefined ? undefined : (JSON.parse(raw) as T);
  }

  set(key: string, value: unknown) { return this.kv.set(key, JSON.stringify(value)); }
  delete(key: string) { return this.kv.delete(key); }

  async entries<T>(prefix: string): Promise<[string, T][]> {
    const keys = await this.kv.keys(prefix);
    const values = await Promise.all(keys.map((k) => this.get<T>(k)));
    return keys.flatMap((k, i) => (values[i] === undefined ? [] : [[k, values[i] as T] as [string, T]]));
  }
}
