import { randomBytes } from 'node:crypto';
import { openAsBlob, promises as fs } from 'node:fs';
import path from 'node:path';
import type { AttachmentStore } from './attachments.js';
import type { FileData } from './multipart.js';
import type { KeyValueStore, KeyValueWrite } from './storage/keyValue.js';

const SUFFIX = '.json';
const TEMP = '.tmp';

/** Creates the directory, and removes the temporary files of writes a crash cut short. */
async function openDirectory(dir: string) {
  await fs.mkdir(dir, { recursive: true });
  for (const name of await fs.readdir(dir)) {
    if (name.endsWith(TEMP)) await fs.rm(path.join(dir, name), { force: true });
  }
}

/**
 * A KeyValueStore in a directory, one file per key, for Node apps and tests. Every write goes
 * to a temp file that is fsynced and renamed over the target, then the directory is fsynced:
 * a crash leaves either the old or the new value, never a torn one. Stray temp files from a
 * crash are ignored and removed on open.
 */
export class FileStore implements KeyValueStore {
  private readonly queues = new Map<string, Promise<void>>();

  private constructor(readonly dir: string) {}

  static async open(dir: string): Promise<FileStore> {
    await openDirectory(dir);
    return new FileStore(dir);
  }

  async get(key: string) {
    try {
      return await fs.readFile(this.file(key), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  set(key: string, value: string) {
    return this.serial(key, () => writeDurably(this.file(key), value));
  }

  delete(key: string) {
    return this.serial(key, async () => {
      await fs.rm(this.file(key), { force: true });
      await syncDir(this.dir);
    });
  }

  /**
   * Every file written durably, in parallel, and the directory synced once at the end. Not one
   * transaction: a crash in the middle keeps some of the writes, each of them whole.
   */
  async batch(writes: KeyValueWrite[]) {
    const last = new Map(writes.map((w) => [w.key, w]));
    await Promise.all(
      [...last.values()].map(({ key, value }) =>
        this.serial(key, () =>
          value === undefined ? fs.rm(this.file(key), { force: true }) : writeDurably(this.file(key), value, { syncDir: false }),
        ),
      ),
    );
    await syncDir(this.dir);
  }

  async keys(prefix = '') {
    const names = await fs.readdir(this.dir);
    return names
      .filter((n) => n.endsWith(SUFFIX))
      .map((n) => decodeURIComponent(n.slice(0, -SUFFIX.length)))
      .filter((k) => k.startsWith(prefix))
      .sort();
  }

  async close() {
    await Promise.all(this.queues.values());
  }

  private file(key: string) {
    return path.join(this.dir, `${encodeURIComponent(key).replaceAll('.', '%2E')}${SUFFIX}`);
  }

  /** Writes to one key run in call order, so the last call's value is the one that stays. */
  private serial(key: string, work: () => Promise<void>): Promise<void> {
    const previous = this.queues.get(key) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(work);
    this.queues.set(key, next);
    void next
      .finally(() => {
        if (this.queues.get(key) === next) this.queues.delete(key);
      })
      .catch(() => undefined);
    return next;
  }
}

/** Writes `data` to `target` durably: a temp file, fsync, rename, fsync of the directory. */
async function writeDurably(target: string, data: string | Uint8Array, { syncDir: sync = true } = {}) {
  const temp = `${target}.${randomBytes(6).toString('hex')}${TEMP}`;
  const handle = await fs.open(temp, 'w');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(temp, target);
  if (sync) await syncDir(path.dirname(target));
}

async function syncDir(dir: string) {
  // Makes a rename or removal itself durable; some platforms (Windows) cannot open a directory.
  try {
    const handle = await fs.open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EISDIR' && (error as NodeJS.ErrnoException).code !== 'EPERM') throw error;
  }
}

/**
 * Photos and signatures as files in a directory, one per attachment. `get` answers a Blob
 * backed by the file, so sending a photo never holds it in memory.
 */
export class FileAttachmentStore implements AttachmentStore {
  private constructor(readonly dir: string) {}

  static async open(dir: string): Promise<FileAttachmentStore> {
    await openDirectory(dir);
    return new FileAttachmentStore(dir);
  }

  async put(id: string, data: FileData) {
    if ('uri' in data) {
      await fs.copyFile(data.uri.replace(/^file:\/\//, ''), this.file(id));
      await syncDir(this.dir);
      return;
    }
    await writeDurably(this.file(id), data instanceof Uint8Array ? data : new Uint8Array(await data.arrayBuffer()));
  }

  async get(id: string): Promise<FileData | undefined> {
    // openAsBlob reports a missing file without an error code: ask first.
    try {
      await fs.access(this.file(id));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    return openAsBlob(this.file(id));
  }

  async delete(id: string) {
    await fs.rm(this.file(id), { force: true });
  }

  private file(id: string) {
    return path.join(this.dir, encodeURIComponent(id).replaceAll('.', '%2E'));
  }
}
