// setTimeout's longest delay; a later deadline re-arms the timer.
const MAX_TIMER_MS = 2 ** 31 - 1;
// Entries of members deleted before their time stay in the heap until it comes; past this many, it is rebuilt.
const MIN_REBUILD = 1024;

interface Entry<T> {
  at: number;
  member: T;
}

/**
 * Calls `due` for each member at its time (epoch ms), with one timer for all of them. A timer per
 * member would give each of thousands of long-lived sockets a timer and, as Node keeps one list
 * per distinct delay, a timer list of its own.
 */
export class Deadlines<T> {
  /** A binary min-heap by `at`. */
  private heap: Entry<T>[] = [];
  private readonly atOf = new Map<T, number>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;

  constructor(private readonly due: (member: T) => void) {}

  /** `due(member)` at `at`, once; replaces the member's earlier deadline. */
  set(member: T, at: number) {
    this.atOf.set(member, at);
    this.push({ at, member });
    if (this.heap.length > 2 * this.atOf.size + MIN_REBUILD) this.rebuild();
    if (at < this.timerAt) this.arm();
  }

  delete(member: T) {
    this.atOf.delete(member);
  }

  stop() {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private fire() {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = Date.now();
    try {
      while (this.heap.length > 0 && this.heap[0].at <= now) {
        const { at, member } = this.pop();
        if (this.atOf.get(member) !== at) continue;
        this.atOf.delete(member);
        this.due(member);
      }
    } finally {
      // A `due` that throws must not leave every later deadline without a timer.
      this.arm();
    }
  }

  private arm() {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = this.heap[0]?.at ?? Infinity;
    if (this.timerAt === Infinity) return;
    this.timer = setTimeout(() => this.fire(), Math.min(Math.max(0, this.timerAt - Date.now()), MAX_TIMER_MS));
    this.timer.unref();
  }

  private rebuild() {
    const live = [...this.atOf].map(([member, at]) => ({ at, member }));
    this.heap = [];
    for (const entry of live) this.push(entry);
  }

  private push(entry: Entry<T>) {
    const heap = this.heap;
    let i = heap.push(entry) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent].at <= entry.at) break;
      heap[i] = heap[parent];
      i = parent;
    }
    heap[i] = entry;
  }

  private pop(): Entry<T> {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop()!;
    if (heap.length === 0) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const child = left + 1 < heap.length && heap[left + 1].at < heap[left].at ? left + 1 : left;
      if (heap[child].at >= last.at) break;
      heap[i] = heap[child];
      i = child;
    }
    heap[i] = last;
    return top;
  }
}
