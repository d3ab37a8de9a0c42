/** Base64 by hand: not every JavaScript engine of a phone has atob and btoa. */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const LOOKUP = new Map([...ALPHABET].map((c, i) => [c, i]));

export function toBase64(bytes: Uint8Array): string {
  const out: string[] = [];
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out.push(
      ALPHABET[(n >> 18) & 63],
      ALPHABET[(n >> 12) & 63],
      i + 1 < bytes.length ? ALPHABET[(n >> 6) & 63] : '=',
      i + 2 < bytes.length ? ALPHABET[n & 63] : '=',
    );
  }
  return out.join('');
}

export function fromBase64(text: string): Uint8Array {
  const clean = text.replace(/=+$/, '');
  const bytes = new Uint8Array(Math.floor((clean.length * 3) / 4));
  let buffer = 0;
  let bits = 0;
  let at = 0;
  for (const c of clean) {
    buffer = (buffer << 6) | (LOOKUP.get(c) ?? 0);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes[at++] = (buffer >> bits) & 255;
    }
  }
  return bytes;
}
