/**
 * A per-attempt timeout on the simulation clock, shared by the reimplemented peers. It
 * uses the clock's own timers (not the scheduler's buckets) so that a timeout cleared
 * by an answer costs nothing when its time comes.
 */
/** Like UpstreamError, a plain object: no stack capture per simulated failure. */
export class TimeoutError {
  constructor() {
    this.kind = 'timeout';
  }
}

/** Settles like `pending`, or rejects with TimeoutError after `ms`, whichever comes first. */
export function attemptWithTimeout(sched, pending, ms) {
  const clock = sched.clock;
  return new Promise((resolve, reject) => {
    const timer = clock.setTimeout(() => reject(new TimeoutError()), ms);
    pending.then(
      (value) => {
        clock.clearTimeout(timer);
        resolve(value);
      },
      (error) => {
        clock.clearTimeout(timer);
        reject(error);
      },
    );
  });
}
