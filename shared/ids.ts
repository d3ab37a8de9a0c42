/**
 * Time-ordered ids: UUIDv7 (RFC 9562), 48 bits of Unix milliseconds, the version, a 12-bit
 * counter, the variant and 62 random bits. An index keyed by them grows at its right edge, so
 * the pages a push writes stay in memory however long the history gets; random v4 keys spread
 * every insert over the whole index. The service and the SDK make their ids here, with only
 * `crypto.getRandomValues`: it runs on Node, in browsers and on Hermes (with a polyfill).
 */

type Clock = () => number;
type RandomBytes = (bytes: Uint8Array) => Uint8Array;

const hex = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const COUNTER_MAX = 0xfff;

function platformRandom(): RandomBytes {
  const c = (globalThis as { crypto?: { getRandomValues?: RandomBytes } }).crypto;
  if (!c?.getRandomValues) throw new Error('no crypto.getRandomValues here (React Native: install a polyfill or pass randomId)');
  return (bytes) => c.getRandomValues!(bytes);
}

/**
 * A generator of UUIDv7 strings, strictly increasing within it (RFC 9562 §6.2, method 1): in
 * the same millisecond, or when the clock steps back, the counter counts on from a random start
 * in its lower half; when it runs out the time moves one millisecond ahead.
 */
export function timeOrderedIds(now: Clock = Date.now, random?: RandomBytes): () => string {
  let lastMs = -1;
  let counter = 0;
  let fill: RandomBytes | undefined = random;
  return () => {
    fill ??= platformRandom();
    const bytes = fill(new Uint8Array(16));
    const ms = Math.floor(now());
    if (ms > lastMs) {
      lastMs = ms;
      counter = ((bytes[6] << 8) | bytes[7]) & 0x7ff;
    } else if (++counter > COUNTER_MAX) {
      lastMs++;
      counter = ((bytes[6] << 8) | bytes[7]) & 0x7ff;
    }
    // 48-bit milliseconds, big-endian; division keeps it exact beyond 32 bits.
    const high = Math.floor(lastMs / 0x1_0000_0000);
    const low = lastMs >>> 0;
    bytes[0] = (high >>> 8) & 0xff;
    bytes[1] = high & 0xff;
    bytes[2] = low >>> 24;
    bytes[3] = (low >>> 16) & 0xff;
    bytes[4] = (low >>> 8) & 0xff;
    bytes[5] = low & 0xff;
    bytes[6] = 0x70 | (counter >>> 8);
    bytes[7] = counter & 0xff;
    bytes[8] = 0x80 | (bytes[8] & 0x3f);
    let id = '';
    for (let i = 0; i < 16; i++) id += (i === 4 || i === 6 || i === 8 || i === 10 ? '-' : '') + hex[bytes[i]];
    return id;
  };
}

/** The next time-ordered id of this process (or app). */
export const newId: () => string = timeOrderedIds();
