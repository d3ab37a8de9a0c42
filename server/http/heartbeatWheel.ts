/** How often a tick may come at most: a shorter interval gets fewer, fuller slices. */
const MIN_TICK_MS = 10;
const MAX_SLICES = 100;

/**
 * Visits every member once per interval, a slice at each tick instead of all at once: each member
 * joins the slice with the fewest members, so one tick never holds the event loop for long however
 * many members there are. `afterRound` runs once per interval, after the last slice.
 */
export class HeartbeatWheel<T> {
  private readonly slices: Set<T>[];
  private readonly sliceOf = new Map<T, Set<T>>();
  private next = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(intervalMs: number, visit: (member: T) => void, afterRound: () => void) {
    const count = Math.max(1, Math.min(MAX_SLICES, Math.floor(intervalMs / MIN_TICK_MS)));
    this.slices = Array.from({ length: count }, () => new Set<T>());
    this.timer = setInterval(() => {
      for (const member of this.slices[this.next]) visit(member);
      this.next = (this.next + 1) % count;
      if (this.next === 0) afterRound();
    }, intervalMs / count);
    this.timer.unref();
  }

  add(member: T) {
    let smallest = this.slices[0];
    for (const slice of this.slices) if (slice.size < smallest.size) smallest = slice;
    smallest.add(member);
    this.sliceOf.set(member, smallest);
  }

  delete(member: T) {
    this.sliceOf.get(member)?.delete(member);
    this.sliceOf.delete(member);
  }

  stop() {
    clearInterval(this.timer);
  }
}
