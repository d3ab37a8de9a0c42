import { eq } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { attachmentContents, attachments } from '../../db/schema.js';
import { notFound, upstream } from '../../errors.js';
import type { DocumentStore } from './store.js';

const PREFIX = '~db/';

/** The reference of an attachment whose bytes are in `attachment_contents`. */
export const databaseReference = (attachmentId: string) => `${PREFIX}${attachmentId}`;

/**
 * The document store as the service reads it: references of `databaseReference` are answered
 * from the database (and have no store-made previews), everything else by the store.
 */
export function withDatabaseDocuments(store: DocumentStore, db: Db): DocumentStore {
  const inDatabase = (reference: string) => reference.startsWith(PREFIX);
  return {
    async put(bytes, contentType, name) {
      const reference = await store.put(bytes, contentType, name);
      // Such a reference would be looked up in the database, not in the store that made it.
      if (inDatabase(reference)) throw upstream(`The document store answered a reference reserved for the database: ${reference}`);
      return reference;
    },
    async get(reference) {
      if (!inDatabase(reference)) return store.get(reference);
      const [row] = await db
        .select({ bytes: attachmentContents.bytes, contentType: attachments.contentType })
        .from(attachmentContents)
        .innerJoin(attachments, eq(attachments.id, attachmentContents.attachmentId))
        .where(eq(attachmentContents.attachmentId, reference.slice(PREFIX.length)));
      if (!row) throw notFound('Document');
      return row;
    },
    preview: async (reference, request) => (inDatabase(reference) ? undefined : store.preview?.(reference, request)),
    close: async () => store.close?.(),
  };
}
