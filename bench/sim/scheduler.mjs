/**
 * Simulation events on the library's FakeClock.
 *
 * Every event the simulator itself schedules (arrivals, upstream answers, the peers'
 * timers) lands on a whole millisecond and shares one FakeClock timer with every other
 * event due that millisecond. FakeClock lets promise continuations run after each timer
 * it fires, which is what makes the pool behave as on a real event loop, but that flush
 * is also its main cost; coalescing same-millisecond events keeps the simulator fast at
 * high offered load. The pool under test uses the same FakeClock directly, unchanged.
 */
export class Scheduler {
  /** @param {import('../../dist/testing/index.js').FakeClock} clock */
  constructor(clock) {
    this.clock = clock;
    /** @type {Map<number, (() => void)[]>} */
    this.buckets = new Map();
  }

  now() {
    return this.clock.now();
  }

  /** Runs `fn` at virtual time `t` (rounded up to a whole millisecond, never in the past). */
  at(t, fn) {
    const now = this.clock.now();
    const due = Math.max(Math.ceil(t), Math.ceil(now));
    let bucket = this.buckets.get(due);
    if (bucket === undefined) {
      bucket = [];
      this.buckets.set(due, bucket);
      this.clock.setTimeout(() => this.#fire(due), due - now);
    }
    bucket.push(fn);
  }

  /** Runs `fn` after `ms`; returns a handle whose `cancel()` stops it. */
  after(ms, fn) {
    const handle = new Handle(fn);
    this.at(this.clock.now() + ms, handle.run);
    return handle;
  }

  /** A promise that resolves after `ms` of virtual time. */
  sleep(ms) {
    return new Promise((resolve) => this.at(this.clock.now() + ms, resolve));
  }

  #fire(due) {
    const bucket = this.buckets.get(due);
    this.buckets.delete(due);
    for (let i = 0; i < bucket.length; i++) bucket[i]();
  }
}

class Handle {
  constructor(fn) {
    this.fn = fn;
    this.run = () => {
      if (this.fn !== undefined) this.fn();
    };
  }

  cancel() {
    this.fn = undefined;
  }
}
