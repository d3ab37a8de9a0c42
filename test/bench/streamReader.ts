/**
 * The reader of the unparameterised completed-deliveries list, in a process of its own (forked
 * by history.ts): the service's memory is then measured alone. It receives the service's URL,
 * reads the list as a stream, counts its entries (holding none) and answers how long it took.
 */
import { BENCH_ADMIN_KEY } from './target.js';

export interface StreamRead {
  ms: number;
  /** The answer's `count` and the entries counted in it. */
  count: number;
  deliveries: number;
}

async function read(url: string): Promise<StreamRead> {
  const t0 = performance.now();
  const reply = await fetch(`${url}/admin/completed-deliveries`, { headers: { 'x-admin-api-key': BENCH_ADMIN_KEY } });
  if (reply.status !== 200) throw new Error(`completed-deliveries: ${reply.status} ${(await reply.text()).slice(0, 200)}`);
  const decoder = new TextDecoder();
  let head = '';
  let tail = '';
  let deliveries = 0;
  for await (const chunk of reply.body as unknown as AsyncIterable<Uint8Array>) {
    const text = tail + decoder.decode(chunk, { stream: true });
    if (head.length < 40) head += text.slice(0, 40);
    deliveries += text.split('"delivery_id":').length - 1;
    tail = text.slice(-14);
    // A key cut at the chunk's end is counted with the next chunk.
    if (tail.includes('"delivery_id":')) tail = tail.slice(tail.indexOf('"delivery_id":') + 1);
  }
  const count = Number(/^\{"count":(\d+)/.exec(head)?.[1] ?? NaN);
  return { ms: performance.now() - t0, count, deliveries };
}

process.once('message', (url: string) => {
  read(url).then(
    (result) => process.send!({ ok: true, result }, () => process.exit(0)),
    (error: unknown) => process.send!({ ok: false, error: error instanceof Error ? error.message : String(error) }, () => process.exit(1)),
  );
});
