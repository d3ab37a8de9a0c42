/** One write of a batch: `value` sets the key, no value deletes it. */
export interface KeyValueWrite {
  key: string;
  value?: string;
}

/**
 * The storage the SDK needs: string values under string keys. An app backs it with whatever
 * it has (SQLite, IndexedDB, files, MMKV); the SDK writes one key per outbox entry and per tour,
 * so a change of one entry is a single-key write, and an answer for many entries is one batch.
 * `contract.ts` holds the checks every implementation must pass.
 */
export interface KeyValueStore {
  get(key: string): Promise<string | undefined>;
  /** Resolves only once the value is durable. */
  set(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
  /** Keys starting with `prefix`, in ascending order. */
  keys(prefix?: string): Promise<string[]>;
  /**
   * Several writes with one durable commit, in one transaction where the storage has them.
   * Without it the SDK writes one key after the other.
   */
  batch?(writes: KeyValueWrite[]): Promise<void>;
  close?(): Promise<void>;
  /** Set by storage that other tabs of the app open too (IndexedDB): the name they coordinate under. */
  readonly shared?: string;
}

/** Keeps everything in memory: for tests, and for apps that accept losing the outbox on restart. */
export class MemoryStore implements KeyValueStore {
  private readonly data = new Map<string, string>();

  async get(key: string) {
    return this.data.get(key);
  }
  async set(key: string, value: string) {
    this.data.set(key, value);
  }
  async delete(key: string) {
    this.data.delete(key);
  }
  async keys(prefix = '') {
    return [...this.data.keys()].filter((k) => k.startsWith(prefix)).sort();
  }
  async batch(writes: KeyValueWrite[]) {
    for (const { key, value } of writes) {
      if (value === undefined) this.data.delete(key);
      else this.data.set(key, value);
    }
  }
}

/** Where a stored value that cannot be read is moved, under its own key, for support to look at. */
export const SET_ASIDE_PREFIX = 'corrupt/';

/** A stored value the SDK could not read: moved to `corrupt/<key>` instead of stopping the start. */
export interface SetAside {
  key: string;
  reason: string;
}

/** JSON on top of a KeyValueStore; unreadable values are set aside and reported in `setAside`. */
export class JsonStore {
  readonly setAside: SetAside[] = [];

  constructor(readonly kv: KeyValueStore) {}

  async get<T>(key: string, valid: (value: unknown) => boolean = () => true): Promise<T | undefined> {
    const raw = await this.kv.get(key);
    return raw === undefined ? undefined : this.parse<T>(key, raw, valid);
  }

  set(key: string, value: unknown) {
    return this.kv.set(key, JSON.stringify(value));
  }
  delete(key: string) {
    return this.kv.delete(key);
  }

  /** Sets and deletes (`undefined`) in one batch. */
  batch(writes: [string, unknown][]) {
    return this.write(writes.map(([key, value]) => (value === undefined ? { key } : { key, value: JSON.stringify(value) })));
  }

  async entries<T>(prefix: string, valid: (value: unknown) => boolean = () => true): Promise<[string, T][]> {
    const keys = await this.kv.keys(prefix);
    const raws = await Promise.all(keys.map((k) => this.kv.get(k)));
    const values = await Promise.all(keys.map((k, i) => (raws[i] === undefined ? undefined : this.parse<T>(k, raws[i]!, valid))));
    return keys.flatMap((k, i) => (values[i] === undefined ? [] : [[k, values[i] as T] as [string, T]]));
  }

  /** One unreadable entry never stops the start: it moves aside, and the rest loads. */
  private async parse<T>(key: string, raw: string, valid: (value: unknown) => boolean): Promise<T | undefined> {
    let reason: string;
    try {
      const value = JSON.parse(raw) as unknown;
      if (valid(value)) return value as T;
      reason = 'not the shape the SDK stores';
    } catch (error) {
      reason = `not JSON: ${(error as Error).message}`;
    }
    // The copy first: a crash in between leaves the value twice, never nowhere.
    await this.write([{ key: `${SET_ASIDE_PREFIX}${key}`, value: raw }, { key }]);
    this.setAside.push({ key, reason });
    return undefined;
  }

  private write(writes: KeyValueWrite[]): Promise<void> {
    if (this.kv.batch) return this.kv.batch(writes);
    return writes.reduce(
      (chain, { key, value }) => chain.then(() => (value === undefined ? this.kv.delete(key) : this.kv.set(key, value))),
      Promise.resolve(),
    );
  }
}
