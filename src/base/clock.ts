/**
 * Time and randomness, injected once into a pool and handed down to every part of it.
 *
 * Nothing else in the library reads `Date.now()` or `performance.now()`, calls
 * `setTimeout` or `Math.random()`: that is what lets the whole pool run on `FakeClock`
 * (from `endpoint-pool/testing`) with no real sleeps.
 *
 * Two readings of time, for two purposes. `now()` is monotonic: every duration (deadlines,
 * attempt timeouts, token buckets, paced windows, cooldowns, breaker periods) is a
 * difference of `now()`, so stepping the system clock (NTP, a VM resumed, an operator)
 * changes none of them. `wallNow()` is the calendar time, read only where a calendar is
 * meant: the hour at which daily quotas reset and HTTP dates in `Retry-After`.
 *
 * Every draw of the random source goes through {@link guardRandom}: a source that throws
 * or answers outside [0, 1) (NaN, Infinity, 1, a string) counts as 0.5 for that draw.
 */

/** An opaque handle returned by {@link Clock.setTimeout}. */
export type TimerHandle = unknown;

export interface Clock {
  /**
   * Milliseconds on a monotonic clock: never steps back, never jumps with the wall clock.
   * Only differences are meaningful (the system clock starts near the Unix epoch time of
   * the process start).
   */
  now(): number;
  /**
   * Milliseconds since the Unix epoch, on the wall clock (like `Date.now()`): read only for
   * calendar boundaries (the daily reset hour) and HTTP dates. Optional: a clock without it
   * uses `now()`.
   */
  wallNow?(): number;
  /**
   * Calls `fn` once after `ms` milliseconds (`Infinity`: never). With `background: true`
   * the timer must not keep the process alive on its own (Node's `unref`); a call's own
   * waits pass `false` so that `await pool.execute()` in a script is not cut short.
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

/**
 * The one guard every draw goes through: `random`'s answer if it is a number in [0, 1),
 * else 0.5 (a source that throws, answers NaN, Infinity, 1 or a non-number).
 */
export function guardRandom(random: RandomSource): RandomSource {
  return () => safeDraw(random);
}

/** One draw from `random`, or 0.5 when it throws or answers outside [0, 1). */
export function safeDraw(random: RandomSource): number {
  let r: unknown;
  try {
    r = random();
  } catch {
    return 0.5;
  }
  return typeof r === 'number' && r >= 0 && r < 1 ? r : 0.5;
}

/** The wall-clock reading of `clock` (`wallNow()`, or `now()` for a clock without one). */
export function wallNow(clock: Clock): number {
  return clock.wallNow !== undefined ? clock.wallNow() : clock.now();
}

interface Unrefable {
  unref?: () => unknown;
  ref?: () => unknown;
}

/** Hosts run a timer longer than this at once (Node: after 1 ms), so longer waits are taken in steps. */
const MAX_HOST_DELAY_MS = 2_147_483_647;

/**
 * A wait longer than the host allows: re-armed until its due time. Its keep-alive state
 * (`ref`/`unref`) is remembered and applied to every step, so an unref'd long timer never
 * keeps the process alive. An infinite wait arms nothing at all.
 */
class LongTimer implements Unrefable {
  handle: ReturnType<typeof setTimeout> | undefined;
  background: boolean;
  constructor(background: boolean) {
    this.background = background;
  }
  ref(): void {
    this.background = false;
    (this.handle as Unrefable | undefined)?.ref?.();
  }
  unref(): void {
    this.background = true;
    (this.handle as Unrefable | undefined)?.unref?.();
  }
}

function hostTimeout(fn: () => void, ms: number, background: boolean): ReturnType<typeof setTimeout> {
  const handle = setTimeout(fn, ms);
  if (background) (handle as Unrefable).unref?.();
  return handle;
}

/**
 * A monotonic millisecond reading: `performance.now()` from the time origin (near the epoch).
 * The `performance` object is read once: in Node the global is an accessor, and calling
 * its getter on every reading cost 7-11 ns more per reading (about a fifth of it).
 */
const monotonic: () => number =
  typeof performance !== 'undefined' && typeof performance.now === 'function'
    ? ((perf: Performance) => {
        const origin = typeof perf.timeOrigin === 'number' ? perf.timeOrigin : Date.now() - perf.now();
        return () => origin + perf.now();
      })(performance)
    : () => Date.now();

/** The clock of the host: `performance.now()` for durations, `Date.now()` for the calendar, the global timers. */
export const systemClock: Clock = {
  now: monotonic,
  wallNow: () => Date.now(),
  setTimeout(fn, ms, background) {
    // A negative or NaN delay fires at once, without Node's TimeoutNegativeWarning (Node 23 and later).
    if (!(ms > MAX_HOST_DELAY_MS)) return hostTimeout(fn, ms > 0 ? ms : 0, background === true);
    const timer = new LongTimer(background === true);
    if (ms === Infinity) return timer;
    const due = monotonic() + ms;
    const step = (): void => {
      const left = due - monotonic();
      if (left > 0) timer.handle = hostTimeout(step, Math.min(left, MAX_HOST_DELAY_MS), timer.background);
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

/** The part of Node's `process` that `exitHolds` uses. */
interface HostProcess {
  on?: (event: 'beforeExit', listener: () => void) => unknown;
  readonly versions?: Readonly<Record<string, string | undefined>>;
}

/** The holds run when the host would exit for lack of work (see `exitHolds`). */
const holds = new Set<() => void>();
let holding = false;

/**
 * @internal For the system clock on Node: a set of "holds", each run when the process is about
 * to exit for lack of work (`beforeExit`, in worker threads too) and free to reference a timer
 * to keep it running (they run again the next time the loop runs dry). Lets a timer stay
 * unreferenced while it is busy and be referenced only when nothing else would keep the process
 * alive: no `ref`/`unref` per call. Bun and Deno emit `beforeExit` as Node does (again each
 * time the loop runs dry, and a timer referenced by a listener keeps it running: Bun 1.4 and
 * Deno 2.9, `test/liveness.test.ts` on each), so there too; a Deno whose `process` is not a
 * global (1.x) does without. `undefined` for any other clock or host (a browser never exits):
 * the caller then references its timer itself while it matters.
 */
export function exitHolds(clock: Clock): Set<() => void> | undefined {
  const p = (globalThis as { process?: HostProcess }).process;
  if (clock !== systemClock || typeof p?.on !== 'function' || typeof p.versions?.node !== 'string') return undefined;
  if (!holding) {
    holding = true;
    p.on('beforeExit', () => {
      for (const hold of holds) hold();
    });
  }
  return holds;
}

/** The host's random source, `Math.random`. */
export const systemRandom: RandomSource = () => Math.random();
