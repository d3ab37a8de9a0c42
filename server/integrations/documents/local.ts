import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { notFound } from '../../errors.js';
import type { DocumentStore } from './store.js';

const REFERENCE = /^~sha256\/([0-9a-f]{64})$/;

/**
 * Content-addressed files under `<dataDir>/documents`: the reference is the sha256 of the
 * bytes, so storing the same bytes twice is one file and a failed transaction after a put
 * leaves at most an unreferenced blob. Without a data directory (tests) a temporary
 * directory is used and removed on close.
 */
export function createLocalDocumentStore(dataDir: string | undefined): DocumentStore & { root: string } {
  const temporary = !dataDir;
  const root = dataDir ? path.join(dataDir, 'documents') : mkdtempSync(path.join(os.tmpdir(), 'tourline-documents-'));
  const blobPath = (hex: string) => path.join(root, 'sha256', hex.slice(0, 2), hex);

  // Write to a unique temporary name in the same directory, then rename: readers see the whole file or none.
  async function writeAtomically(target: string, bytes: Buffer | string) {
    await mkdir(path.dirname(target), { recursive: true });
    const temp = `${target}.${randomUUID()}.tmp`;
    try {
      await writeFile(temp, bytes);
      await rename(temp, target);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  }

  return {
    root,
    async put(bytes, contentType, name) {
      const hex = createHash('sha256').update(bytes).digest('hex');
      const file = blobPath(hex);
      await writeAtomically(file, bytes);
      // The content type lives beside the blob; the blob is written first so metadata never points at nothing.
      await writeAtomically(`${file}.json`, JSON.stringify({ contentType, name: name ?? null }));
      return `~sha256/${hex}`;
    },
    async get(reference) {
      const match = REFERENCE.exec(reference);
      if (!match) throw notFound('Document');
      const file = blobPath(match[1]);
      try {
        const [bytes, meta] = await Promise.all([readFile(file), readFile(`${file}.json`, 'utf8')]);
        return { bytes, contentType: (JSON.parse(meta) as { contentType: string }).contentType };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw notFound('Document');
        throw error;
      }
    },
    async close() {
      if (temporary) await rm(root, { recursive: true, force: true });
    },
  };
}
