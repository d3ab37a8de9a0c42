import { describe, expect, it } from 'vitest';
import { AnnouncedHead } from '../../server/engine/announcedHead.js';

const settledAt = (head: number) => {
  const announced = new AnnouncedHead();
  announced.settle(head);
  return announced;
};
const accountsOf = (announced: AnnouncedHead) => {
  const due = announced.takeDue();
  return due && { upTo: due.upTo, accounts: due.accounts && [...due.accounts].sort() };
};

describe('the stable head announced by the commits', () => {
  it('is unknown, and wakes nobody, until a head is settled under the lock', () => {
    const announced = new AnnouncedHead();
    announced.announce([[1, 3]], [7]);
    expect(announced.value).toBeUndefined();
    expect(announced.takeDue()).toBeUndefined();
    announced.settle(0);
    expect(announced.value).toBe(3);
    expect(accountsOf(announced)).toEqual({ upTo: 3, accounts: [7] });
  });

  it('moves over commits that arrive in the order of their seqs, and wakes their accounts once', () => {
    const announced = settledAt(10);
    announced.announce([[11, 12]], [1]);
    announced.announce([[13, 13]], [2]);
    expect(accountsOf(announced)).toEqual({ upTo: 13, accounts: [1, 2] });
    expect(announced.takeDue()).toBeUndefined();
    expect(announced.stalled).toBe(false);
  });

  it('holds a commit above a seq still in flight, and passes both when it arrives', () => {
    const announced = settledAt(10);
    announced.announce([[12, 14]], [2]);
    expect(announced.value).toBe(10);
    expect(announced.stalled).toBe(true);
    expect(announced.takeDue()).toBeUndefined();
    announced.announce([[11, 11]], [1]);
    expect(accountsOf(announced)).toEqual({ upTo: 14, accounts: [1, 2] });
    expect(announced.stalled).toBe(false);
  });

  it('takes the runs of commits whose seqs interleave', () => {
    const announced = settledAt(10);
    announced.announce(
      [
        [11, 11],
        [13, 14],
      ],
      [1],
    );
    expect(announced.value).toBe(11);
    announced.announce([[12, 12]], [2]);
    expect(accountsOf(announced)).toEqual({ upTo: 14, accounts: [1, 2] });
  });

  it('passes a seq that never arrives once a head read under the lock settles it', () => {
    const announced = settledAt(10);
    announced.announce([[12, 12]], [2]);
    announced.announce([[13, 13]], [3]);
    announced.settle(11);
    expect(accountsOf(announced)).toEqual({ upTo: 13, accounts: [2, 3] });
    // A head read later than those commits: their accounts are still woken, and the head never goes back.
    announced.announce([[15, 15]], [5]);
    announced.settle(16);
    announced.settle(14);
    expect(accountsOf(announced)).toEqual({ upTo: 16, accounts: [5] });
  });

  it('wakes every account for a commit every account sees, or when told to', () => {
    const announced = settledAt(10);
    announced.announce([[11, 11]], [1]);
    announced.announce([[12, 12]], 'everyone');
    announced.announce([[13, 13]], [3]);
    expect(accountsOf(announced)).toEqual({ upTo: 13, accounts: undefined });
    announced.addDue(new Set([4]));
    expect(accountsOf(announced)).toEqual({ upTo: 13, accounts: [4] });
    announced.addDue('everyone');
    expect(accountsOf(announced)).toEqual({ upTo: 13, accounts: undefined });
  });
});
