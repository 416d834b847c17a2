/**
 * Time and randomness, injected once into a pool and handed down to every part of it.
 *
 * Nothing else in the library reads `Date.now()`, calls `setTimeout` or `Math.random()`:
 * that is what lets the whole pool run on `FakeClock` (from `endpoint-pool/testing`)
 * with no real sleeps.
 *
 * `now()` is wall-clock milliseconds (like `Date.now()`), because daily quotas reset at
 * a calendar boundary. Durations are always computed as differences of `now()` and
 * clamped at zero, so a clock step backwards can only shorten a wait, never hang it.
 */

/** An opaque handle returned by {@link Clock.setTimeout}. */
export type TimerHandle = unknown;

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /**
   * Calls `fn` once after `ms` milliseconds. With `background: true` the timer must not
   * keep the process alive on its own (Node's `unref`); a call's own waits pass `false`
   * so that `await pool.execute()` in a script is not cut short.
   */
  setTimeout(fn: () => void, ms: number, background?: boolean): TimerHandle;
  /** Cancels a timer; a handle that already fired or was cleared is ignored. */
  clearTimeout(handle: TimerHandle): void;
  /**
   * Whether a pending timer keeps the process alive (Node's `ref`/`unref`). Optional: a
   * clock without it simply keeps every timer as it was created.
   */
  setRef?(handle: TimerHandle, keepAlive: boolean): void;
}

/** A source of uniformly distributed numbers in [0, 1). */
export type RandomSource = () => number;

interface Unrefable {
  unref?: () => unknown;
  ref?: () => unknown;
}

/** Hosts run a timer longer than this at once (Node: after 1 ms), so longer waits are taken in steps. */
const MAX_HOST_DELAY_MS = 2_147_483_647;

/** A wait longer than the host allows: re-armed until its due time. */
class LongTimer {
  handle: ReturnType<typeof setTimeout> | undefined;
}

function hostTimeout(fn: () => void, ms: number, background: boolean): ReturnType<typeof setTimeout> {
  const handle = setTimeout(fn, ms);
  if (background) (handle as Unrefable).unref?.();
  return handle;
}

/** The clock of the host: `Date.now()` and the global timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms, background) {
    if (!(ms > MAX_HOST_DELAY_MS)) return hostTimeout(fn, ms, background === true);
    const timer = new LongTimer();
    if (ms === Number.POSITIVE_INFINITY) return timer;
    const due = Date.now() + ms;
    const step = (): void => {
      const left = due - Date.now();
      if (left > 0) timer.handle = hostTimeout(step, Math.min(left, MAX_HOST_DELAY_MS), background === true);
      else fn();
    };
    step();
    return timer;
  },
  clearTimeout(handle) {
    clearTimeout((handle instanceof LongTimer ? handle.handle : handle) as ReturnType<typeof setTimeout>);
  },
  setRef(handle, keepAlive) {
    if (keepAlive) (handle as Unrefable).ref?.();
    else (handle as Unrefable).unref?.();
  },
};

/** The host's random source, `Math.random`. */
export const systemRandom: RandomSource = () => Math.random();
