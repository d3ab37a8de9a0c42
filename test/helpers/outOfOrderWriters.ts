import type { Db } from '../../server/db/client.js';
import { recordChanges, type ChangeRecord } from '../../server/engine/changeLog.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `writers` concurrent writers doing `transactions` transactions each, every one recording one
 * change after a random pause and holding its transaction open after numbering for up to
 * `holdMs`, where a later seq can commit first; about one in ten rolls back. Answers the seqs
 * that committed.
 */
export async function writeOutOfOrder(
  db: Db,
  change: (writer: number, transaction: number) => ChangeRecord,
  { writers, transactions, holdMs }: { writers: number; transactions: number; holdMs: number },
): Promise<Set<number>> {
  const committed = new Set<number>();
  const writer = async (w: number) => {
    for (let t = 0; t < transactions; t++) {
      const rollback = Math.random() < 0.1;
      try {
        const seq = await db.transaction(async (tx) => {
          await sleep(Math.random() * 4);
          const seq = await recordChanges(tx, [change(w, t)]);
          await sleep(Math.random() * holdMs);
          if (rollback) throw new Error('rolled back on purpose');
          return seq!;
        });
        committed.add(seq);
      } catch (error) {
        if (!rollback) throw error;
      }
    }
  };
  await Promise.all([...Array(writers).keys()].map(writer));
  return committed;
}
