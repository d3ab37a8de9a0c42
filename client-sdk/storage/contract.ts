import type { AttachmentStore } from '../attachments.js';
import type { FileData } from '../multipart.js';
import type { KeyValueStore, KeyValueWrite } from './keyValue.js';

/**
 * The checks every storage adapter must pass, for any test runner:
 *
 *   for (const check of keyValueStoreContract) it(check.name, () => check.run(open));
 *
 * `open` gives a fresh, empty store; `reopen`, where the storage outlives its handle, a second
 * handle on the same data (an app restart). A failed check throws.
 */
export interface Opened<S> {
  store: S;
  reopen?: () => Promise<S>;
}
export interface ContractCheck<S> {
  name: string;
  run(open: () => Promise<Opened<S>>): Promise<void>;
}

function expectEqual(actual: unknown, expected: unknown, what: string) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}

const close = (store: { close?: () => Promise<void> }) => store.close?.();

export const keyValueStoreContract: ContractCheck<KeyValueStore>[] = [
  {
    name: 'answers what was set, undefined for what was not, and nothing after delete',
    async run(open) {
      const { store } = await open();
      expectEqual(await store.get('a'), undefined, 'a key never set');
      await store.set('a', 'one');
      await store.set('a', 'two');
      expectEqual(await store.get('a'), 'two', 'a key set twice');
      await store.delete('a');
      expectEqual(await store.get('a'), undefined, 'a deleted key');
      await store.delete('never-there');
      await close(store);
    },
  },
  {
    name: 'keeps values exactly: empty, quotes, unicode, a megabyte',
    async run(open) {
      const { store } = await open();
      const values = ['', '"\'\\\n\t{}', 'Bäckerei 🚚 Ω', 'x'.repeat(2 ** 20)];
      for (const [i, value] of values.entries()) await store.set(`v${i}`, value);
      for (const [i, value] of values.entries()) if ((await store.get(`v${i}`)) !== value) throw new Error(`value ${i} came back changed`);
      await close(store);
    },
  },
  {
    name: 'lists keys by prefix in ascending order, whatever characters they hold',
    async run(open) {
      const { store } = await open();
      const keys = ['outbox/000000000002-b', 'outbox/000000000001-a', 'outbox%/x', 'outbox_/y', 'tour/ä.b', 'tour/🚚', 'cursor'];
      for (const key of keys) await store.set(key, key);
      expectEqual(await store.keys('outbox/'), ['outbox/000000000001-a', 'outbox/000000000002-b'], 'keys under outbox/');
      expectEqual(await store.keys('tour/'), ['tour/ä.b', 'tour/🚚'], 'keys under tour/');
      expectEqual(await store.keys('nothing/'), [], 'keys under an unused prefix');
      expectEqual(await store.keys(), [...keys].sort(), 'all keys');
      expectEqual(await store.get('tour/🚚'), 'tour/🚚', 'a value under a unicode key');
      await close(store);
    },
  },
  {
    name: 'keeps the value of the last of many concurrent writes to one key',
    async run(open) {
      const { store } = await open();
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.set('k', String(i))));
      expectEqual(await store.get('k'), '19', 'the value after 20 concurrent writes');
      await close(store);
    },
  },
  {
    name: 'applies a batch of sets and deletes, the last write of a key winning',
    async run(open) {
      const { store } = await open();
      await store.set('gone', 'x');
      await store.set('kept', 'x');
      const writes: KeyValueWrite[] = [
        ...Array.from({ length: 300 }, (_, i) => ({ key: `b/${String(i).padStart(3, '0')}`, value: String(i) })),
        { key: 'gone' },
        { key: 'b/000', value: 'last' },
      ];
      if (store.batch) await store.batch(writes);
      else for (const w of writes) await (w.value === undefined ? store.delete(w.key) : store.set(w.key, w.value));
      expectEqual((await store.keys('b/')).length, 300, 'keys written by the batch');
      expectEqual(
        [await store.get('b/000'), await store.get('b/299'), await store.get('gone'), await store.get('kept')],
        ['last', '299', undefined, 'x'],
        'values after the batch',
      );
      await close(store);
    },
  },
  {
    name: 'keeps everything across a reopen (an app restart)',
    async run(open) {
      const { store, reopen } = await open();
      if (!reopen) return;
      await store.set('outbox/1', '{"id":"x"}');
      await store.batch?.([{ key: 'outbox/2', value: '{"id":"y"}' }, { key: 'outbox/1' }]);
      await close(store);
      const again = await reopen();
      expectEqual(await again.keys('outbox/'), store.batch ? ['outbox/2'] : ['outbox/1'], 'keys after a reopen');
      await close(again);
    },
  },
];

async function bytesOf(data: FileData | undefined): Promise<number[] | undefined> {
  if (data === undefined) return undefined;
  if (data instanceof Uint8Array) return [...data];
  if ('uri' in data) throw new Error('a file URI: check this store with files of your platform');
  return [...new Uint8Array(await data.arrayBuffer())];
}

/** The same for attachment stores that take bytes (memory, files, IndexedDB). */
export const attachmentStoreContract: ContractCheck<AttachmentStore>[] = [
  {
    name: 'gives back the bytes put, until they are deleted; an id never put is undefined',
    async run(open) {
      const { store } = await open();
      const photo = new Uint8Array([0xff, 0xd8, 0, 1, 2, 0xff, 0xd9]);
      await store.put('p.1', photo, 'image/jpeg');
      photo[2] = 9; // the caller reuses its buffer: the stored copy must not change
      expectEqual(await bytesOf(await store.get('p.1')), [0xff, 0xd8, 0, 1, 2, 0xff, 0xd9], 'the stored photo');
      expectEqual(await store.get('never'), undefined, 'an id never put');
      await store.delete('p.1');
      expectEqual(await store.get('p.1'), undefined, 'a deleted photo');
      await store.delete('p.1');
    },
  },
  {
    name: 'keeps attachments across a reopen',
    async run(open) {
      const { store, reopen } = await open();
      if (!reopen) return;
      await store.put('sig/customer', new Uint8Array(256 * 1024).fill(7), 'image/png');
      const again = await reopen();
      const bytes = await bytesOf(await again.get('sig/customer'));
      expectEqual([bytes?.length, bytes?.[1000]], [256 * 1024, 7], 'the signature after a reopen');
    },
  },
];
