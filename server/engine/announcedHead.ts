/** Accounts to wake: some, or every account; undefined for none. */
export type Audience = Set<number> | 'everyone' | undefined;

/** The accounts of both. */
export function widen(audience: Audience, accounts: Iterable<number> | 'everyone' | undefined): Audience {
  if (audience === 'everyone' || accounts === 'everyone') return 'everyone';
  if (!accounts) return audience;
  const set = audience ?? new Set<number>();
  for (const account of accounts) set.add(account);
  return set;
}

/** A wake-up for the readers: every change up to `upTo` is readable; `accounts` (all when undefined) may have new ones. */
export type Due = { upTo: number; accounts: ReadonlySet<number> | undefined };

/**
 * The change log's stable head as one process learns it from the commits announced on the change
 * channel: every seq up to it has committed (and is visible to a statement that starts now) or
 * never will. Each commit announces the seqs it took (`changeLogAppend.notify`), and the head
 * moves over them once every seq below them has arrived too, so readers need not take the change
 * log's lock, which would hold up every writer while it waits for those in flight. A seq that
 * never arrives (its writer rolled back, or the announcement was lost with the LISTEN connection)
 * keeps the head where it is until a head read under the lock settles it (`settle`).
 *
 * The accounts of a commit are due for a wake-up once the head has passed its seqs, not before:
 * a reader woken earlier would stop below them and not be woken again.
 */
export class AnnouncedHead {
  private head: number | undefined;
  /** Committed runs of seqs above the head, by their first seq, with the accounts they concern. */
  private readonly above = new Map<number, { last: number; accounts: readonly number[] | 'everyone' }>();
  private due: Audience;

  /** Undefined until the first `settle`. */
  get value(): number | undefined {
    return this.head;
  }

  /** Whether committed seqs wait above a gap. */
  get stalled(): boolean {
    return this.above.size > 0;
  }

  /** A commit's runs of seqs (`[first, last]`) and the accounts they concern. */
  announce(runs: readonly (readonly [number, number])[], accounts: readonly number[] | 'everyone'): void {
    for (const [first, last] of runs) this.above.set(first, { last, accounts });
    this.advance();
  }

  /** A head read under the change log's lock: every seq up to it is settled. */
  settle(head: number): void {
    if (this.head === undefined || head > this.head) this.head = head;
    this.advance();
  }

  /** Wakes these accounts with the head as it is, or as soon as it is known. */
  addDue(accounts: Audience): void {
    this.due = widen(this.due, accounts);
  }

  /** The wake-up due since the last call, if any; only once the head is known. */
  takeDue(): Due | undefined {
    if (this.head === undefined || this.due === undefined) return undefined;
    const due = this.due;
    this.due = undefined;
    return { upTo: this.head, accounts: due === 'everyone' ? undefined : due };
  }

  private advance() {
    if (this.head === undefined) return;
    // Runs arrive in about the order of their seqs, and few wait above a gap.
    for (let moved = true; moved;) {
      moved = false;
      for (const [first, run] of this.above) {
        if (first > this.head + 1) continue;
        this.above.delete(first);
        this.head = Math.max(this.head, run.last);
        this.due = widen(this.due, run.accounts);
        moved = true;
      }
    }
  }
}
