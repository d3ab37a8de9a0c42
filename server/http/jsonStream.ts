import type { Response } from 'express';

/**
 * Writes one JSON object with one long array as its values come, instead of building it whole:
 * `open` sends the object's text up to the array, `items` its elements, `close` the rest. The
 * bytes are those `JSON.stringify` gives for the whole object when the caller's head and tail
 * are. Each write waits while the socket's buffer is full, and fails when the client has gone,
 * so a slow or vanished reader holds no more than a buffer.
 */
export function jsonArrayStream(res: Response) {
  let first = true;
  const write = async (text: string) => {
    if (res.destroyed) throw new Error('the client went away');
    if (res.write(text)) return;
    await new Promise<void>((resolve, reject) => {
      const settle = (error?: Error) => {
        res.off('drain', onDrain);
        res.off('close', onClose);
        if (error) reject(error);
        else resolve();
      };
      const onDrain = () => settle();
      const onClose = () => settle(new Error('the client went away'));
      res.on('drain', onDrain);
      res.on('close', onClose);
    });
  };
  return {
    /** `head` is the object's text before the array, e.g. `{"count":3,"deliveries":`. */
    open(head: string) {
      res.status(200).type('json');
      return write(`${head}[`);
    },
    /** The next elements, each already as its JSON text. */
    items(texts: string[]) {
      const separator = first || texts.length === 0 ? '' : ',';
      if (texts.length > 0) first = false;
      return write(separator + texts.join(','));
    },
    /** `tail` is the object's text after the array, e.g. `,"from":null,"to":null}`. */
    async close(tail: string) {
      await write(`]${tail}`);
      res.end();
    },
  };
}
