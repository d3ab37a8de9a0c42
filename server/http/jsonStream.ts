import type { Response } from 'express';

/**
 * Pieces of the answer are written at about this size, not a page joined whole: a string of
 * hundreds of kilobytes goes to V8's large-object space, which only a full collection frees
 * (its effect on the service's memory is measured in cb68483).
 */
const PIECE_CHARS = 16 * 1024;

/**
 * Writes one JSON object with one long array as its values come, instead of building it whole:
 * `open` sends the object's text up to the array, `items` its elements, `close` the rest. The
 * bytes are those `JSON.stringify` gives for the whole object when the caller's head and tail
 * are. Each call waits while the socket's buffer is full, and fails when the client has gone,
 * so a slow or vanished reader holds no more than a buffer and a call's text.
 */
export function jsonArrayStream(res: Response) {
  let first = true;
  // One listener each for the whole answer: the compression middleware hands 'drain' listeners to
  // its zlib stream and cannot take them off again, so one per wait would pile up.
  let waiting: { resolve: () => void; reject: (error: Error) => void } | undefined;
  res.on('drain', () => waiting?.resolve());
  res.on('close', () => waiting?.reject(new Error('the client went away')));
  // Sends text; answers whether the socket's buffer has room left.
  const send = (text: string) => {
    if (res.destroyed) throw new Error('the client went away');
    return res.write(text);
  };
  const drained = () =>
    new Promise<void>((resolve, reject) => {
      waiting = { resolve, reject };
    }).finally(() => {
      waiting = undefined;
    });
  const write = async (text: string) => {
    if (!send(text)) await drained();
  };
  return {
    /** `head` is the object's text before the array, e.g. `{"count":3,"deliveries":`. */
    open(head: string) {
      res.status(200).type('json');
      return write(`${head}[`);
    },
    /**
     * The next elements, each already as its JSON text: written back to back in pieces, with one
     * wait after them while the socket's buffer is full. The caller bounds a call (a page): a wait
     * per piece costs a trip through the compression's thread (a day's list of 0.75 MB took twice
     * as long in 16 KB pieces each waited for as written whole, measured in 64cbd29).
     */
    async items(texts: string[]) {
      let piece = '';
      let room = true;
      const flush = () => {
        room = send(piece) && room;
        piece = '';
      };
      for (const text of texts) {
        piece += first ? text : `,${text}`;
        first = false;
        if (piece.length >= PIECE_CHARS) flush();
      }
      if (piece) flush();
      if (!room) await drained();
    },
    /** `tail` is the object's text after the array, e.g. `,"from":null,"to":null}`. */
    async close(tail: string) {
      await write(`]${tail}`);
      res.end();
    },
  };
}
