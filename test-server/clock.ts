type Instant = Date | string | number;

/** The service's clock: what "today" is for the tour list and the ERP import. */
export interface ClockControl {
  now(): Date;
  /** Stops the clock at `instant`. */
  set(instant: Instant): void;
  /** Moves the clock on (a stopped clock stays stopped). */
  advance(ms: number): void;
}

/** Runs with real time until set; started with an instant, it stands there. */
export class TestClock implements ClockControl {
  private fixedAt: number | undefined;
  private offsetMs = 0;

  constructor(start?: Instant) {
    if (start !== undefined) this.set(start);
  }

  now() {
    return new Date((this.fixedAt ?? Date.now()) + this.offsetMs);
  }
  set(instant: Instant) {
    const at = new Date(instant).getTime();
    if (Number.isNaN(at)) throw new TypeError(`not a time: ${String(instant)}`);
    this.fixedAt = at;
    this.offsetMs = 0;
  }
  advance(ms: number) {
    this.offsetMs += ms;
  }
}
