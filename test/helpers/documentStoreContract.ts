import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../server/errors.js';
import type { DocumentStore } from '../../server/integrations/documents/store.js';

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DomainError);
  return (error as DomainError).code;
}

/** What every document store does, whatever keeps the bytes: run against each one. */
export function documentStoreContract(name: string, store: () => DocumentStore) {
  describe(`${name} document store: the contract`, () => {
    it('gives back the bytes and content type it stored, under a reference that starts with ~', async () => {
      const bytes = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(64)]);
      const reference = await store().put(bytes, 'application/pdf', 'Lieferbericht LS-1.pdf');
      expect(reference.startsWith('~')).toBe(true);
      expect(await store().get(reference)).toEqual({ bytes, contentType: 'application/pdf' });
    });

    it('takes names that are not ASCII and documents without a name', async () => {
      const named = await store().put(Buffer.from(`Übergabe ${randomUUID()}`), 'text/plain', 'Übergabe – Müller & Söhne.txt');
      const unnamed = await store().put(Buffer.from(`ohne Namen ${randomUUID()}`), 'image/png');
      expect((await store().get(named)).contentType).toBe('text/plain');
      expect((await store().get(unnamed)).contentType).toBe('image/png');
    });

    it('stores the same bytes twice and several documents at once, each readable', async () => {
      const bytes = Buffer.from(`twice ${randomUUID()}`);
      const first = await store().put(bytes, 'text/plain');
      const second = await store().put(Buffer.from(bytes), 'text/plain');
      expect((await store().get(first)).bytes.equals(bytes)).toBe(true);
      expect((await store().get(second)).bytes.equals(bytes)).toBe(true);
      const many = Array.from({ length: 6 }, (_, i) => Buffer.from(`parallel ${i} ${randomUUID()}`));
      const references = await Promise.all(many.map((b) => store().put(b, 'text/plain')));
      for (const [i, reference] of references.entries()) expect((await store().get(reference)).bytes.equals(many[i])).toBe(true);
    });

    it('keeps a large document whole', async () => {
      const bytes = randomBytes(3 * 1024 * 1024);
      const reference = await store().put(bytes, 'application/octet-stream');
      expect((await store().get(reference)).bytes.equals(bytes)).toBe(true);
    });

    it.each(['~sha256/' + 'a'.repeat(64), '~unknown/1', 'no-tilde'])(
      'answers not_found for the unknown reference %j',
      async (reference) => {
        expect(await codeOf(store().get(reference))).toBe('not_found');
      },
    );
  });
}
