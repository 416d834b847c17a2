/**
 * A virtual clock for tests: time moves only when the test says so.
 *
 * `advance(ms)` fires every timer that falls due within the next `ms`, in order of due
 * time (then of creation), sets `now()` to each timer's due time before firing it, and
 * lets pending promise continuations run after each one, so code that awaits a timer and
 * then schedules another sees the world a real event loop would show it.
 *
 * It implements {@link Clock}, so a pool built with `clock: new FakeClock()` never
 * sleeps for real. Users can hand the same clock to their own code under test.
 *
 * Like the system clock it has two readings: `now()` (monotonic, moved only by
 * `advance`/`runAll`) and `wallNow()` (the calendar, which `advance` moves too and
 * `stepWall(ms)` steps on its own, as NTP or an operator would), so a test can show that
 * a wall-clock step changes no duration. `setTimeout(fn, Infinity)` never fires, as on the
 * system clock.
 */
import type { Clock, TimerHandle } from '../base/clock.js';

interface FakeTimer {
  readonly id: number;
  readonly due: number;
  readonly fn: () => void;
  background: boolean;
}

/**
 * How many microtask turns `flush()` yields. Deep enough for the pool's own chains and for a
 * viem request behind a permit queue: 40 was not (a leg's collision reached the pool after the
 * attempt's 200 ms timeout fired, in fake time, where a real event loop runs every continuation
 * first: the quorum generator, `maxConcurrentCalls: 1`).
 */
const FLUSH_TURNS = 100;

/** `new FakeClock(startMs, options)`. */
export interface FakeClockOptions {
  /**
   * `flush()` (and so each timer `advance` fires) waits until every queued continuation has run,
   * however long the chain, as a real event loop does before its next timer; where the runtime has
   * no real `setImmediate` (browsers, Workers, or fake timers replacing it) it falls back to 100
   * turns. Code that polls through an endless chain of continuations until a timer fires then
   * waits for ever, as it would on a real event loop. @default false (100 turns)
   */
  readonly drain?: boolean;
}

type Immediate = ((fn: () => void) => unknown) & { clock?: unknown };

/** The runtime's `setImmediate`, unless missing or replaced by fake timers (`@sinonjs/fake-timers`, as vitest and jest use, marks its fakes with `clock`). */
function realImmediate(): Immediate | undefined {
  const f = (globalThis as { setImmediate?: Immediate }).setImmediate;
  return typeof f === 'function' && !('clock' in f) ? f : undefined;
}

/** Bounds of `FakeClock.runUntilSettled`. */
export interface RunUntilSettledOptions {
  /** Virtual time it may move at most. @default 3600000 (one hour) */
  readonly maxMs?: number;
  /** Timers it may fire at most (a guard against code that reschedules itself). @default 100000 */
  readonly maxSteps?: number;
}

export class FakeClock implements Clock {
  #now: number;
  /** `wallNow() - now()`: changed only by `stepWall`. */
  #wallOffset = 0;
  #seq = 0;
  #timers = new Map<number, FakeTimer>();
  /** Min-heap of pending timers by (due, id); cleared timers are dropped lazily. */
  #heap: FakeTimer[] = [];

  readonly #drain: boolean;

  /** @param startMs the initial value of `now()`. @default 0 */
  constructor(startMs = 0, options: FakeClockOptions = {}) {
    if (!Number.isFinite(startMs)) throw new RangeError(`FakeClock: startMs must be a finite number, got ${String(startMs)}`);
    const drain: unknown = (options as FakeClockOptions | null)?.drain;
    if (drain !== undefined && typeof drain !== 'boolean') throw new RangeError(`FakeClock: options.drain must be a boolean, got ${String(drain)}`);
    this.#now = startMs;
    this.#drain = drain === true;
  }

  now(): number {
    return this.#now;
  }

  /** The wall clock: `now()` plus every `stepWall` so far. */
  wallNow(): number {
    return this.#now + this.#wallOffset;
  }

  /**
   * Steps the wall clock by `ms` (negative: back) without moving monotonic time: no timer
   * fires and `now()` is unchanged; only what reads the calendar (`wallNow()`) sees it.
   */
  stepWall(ms: number): void {
    if (!Number.isFinite(ms)) throw new RangeError(`FakeClock.stepWall: ms must be a finite number, got ${String(ms)}`);
    this.#wallOffset += ms;
  }

  setTimeout(fn: () => void, ms: number, background = false): TimerHandle {
    const id = ++this.#seq;
    // Never due, as on the system clock: a handle that is never pending (and never fires).
    if (ms === Infinity) return id;
    const delay = Number.isFinite(ms) && ms > 0 ? ms : 0;
    const timer: FakeTimer = { id, due: this.#now + delay, fn, background };
    this.#timers.set(id, timer);
    this.#push(timer);
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    if (typeof handle !== 'number' || !this.#timers.delete(handle)) return;
    // Keep the heap from filling up with cleared timers.
    if (this.#heap.length > 64 && this.#heap.length > 2 * this.#timers.size) {
      this.#heap = [];
      for (const t of this.#timers.values()) this.#push(t);
    }
  }

  setRef(handle: TimerHandle, keepAlive: boolean): void {
    const t = typeof handle === 'number' ? this.#timers.get(handle) : undefined;
    if (t !== undefined) t.background = !keepAlive;
  }

  /** Timers scheduled and not yet fired or cleared. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Pending timers that would keep a real process alive (not `background`). */
  get pendingForegroundTimers(): number {
    let n = 0;
    for (const t of this.#timers.values()) if (!t.background) n++;
    return n;
  }

  /** Milliseconds until the next timer is due, or `undefined` when none is pending. */
  nextTimerInMs(): number | undefined {
    const next = this.#earliest();
    return next === undefined ? undefined : next.due - this.#now;
  }

  /** Lets queued promise continuations run without moving time: 100 turns, or all of them with `drain`. */
  async flush(): Promise<void> {
    const immediate = this.#drain ? realImmediate() : undefined;
    if (immediate !== undefined) return new Promise<void>((resolve) => void immediate(resolve));
    for (let i = 0; i < FLUSH_TURNS; i++) await Promise.resolve();
  }

  /**
   * Moves time forward by `ms`, firing every timer due on the way (including timers
   * scheduled by the ones that fire, if they fall within the window).
   */
  async advance(ms: number): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`FakeClock.advance: ms must be a finite number >= 0, got ${String(ms)}`);
    const target = this.#now + ms;
    await this.flush();
    for (;;) {
      const next = this.#earliest();
      if (next === undefined || next.due > target) break;
      this.#timers.delete(next.id);
      this.#now = Math.max(this.#now, next.due);
      next.fn();
      await this.flush();
    }
    // Another advance() running beside this one (not awaited) may have moved time past `target`:
    // time never goes back.
    if (target > this.#now) this.#now = target;
    await this.flush();
  }

  /**
   * Fires timers until none is left, or until `limit` have fired (a guard against code
   * that reschedules itself forever). Returns how many fired.
   */
  async runAll(limit = 10_000): Promise<number> {
    let fired = 0;
    await this.flush();
    while (fired < limit) {
      const next = this.#earliest();
      if (next === undefined) break;
      this.#timers.delete(next.id);
      this.#now = Math.max(this.#now, next.due);
      next.fn();
      fired++;
      await this.flush();
    }
    return fired;
  }

  /**
   * Moves time, timer by timer, until `promise` settles; resolves with its value or
   * rejects with its error. This is `await pool.execute(...)` for a clock nobody else
   * moves: a call with a backoff or a rate-limit wait ahead of it settles instead of
   * waiting for ever. Throws a `RangeError` if the promise is still pending after `maxMs`
   * of virtual time, after `maxSteps` timers, or when no timer is left to fire (it then
   * waits on something other than this clock).
   */
  async runUntilSettled<T>(promise: PromiseLike<T>, options: RunUntilSettledOptions = {}): Promise<T> {
    const maxMs = options.maxMs ?? 3_600_000;
    const maxSteps = options.maxSteps ?? 100_000;
    if (!(maxMs >= 0) || !(maxSteps >= 0)) throw new RangeError('FakeClock.runUntilSettled: maxMs and maxSteps must be numbers >= 0');
    let settled = false;
    // Observed at once, so a rejection is never reported as unhandled while time moves.
    const observed = Promise.resolve(promise).then(
      (value) => {
        settled = true;
        return value;
      },
      (error: unknown) => {
        settled = true;
        throw error;
      },
    );
    observed.catch(() => undefined);
    const until = this.#now + maxMs;
    await this.flush();
    for (let step = 0; !settled; step++) {
      let next = this.#earliest();
      if (next === undefined) {
        // Another advance() running beside this one may have fired the last timer a moment ago:
        // let what it started settle before calling the promise stuck.
        await this.flush();
        if (settled) break;
        next = this.#earliest();
      }
      if (next === undefined) throw new RangeError('FakeClock.runUntilSettled: the promise is pending and no timer is left to fire (it waits on something other than this clock)');
      if (next.due > until) throw new RangeError(`FakeClock.runUntilSettled: still pending after ${maxMs} ms of virtual time`);
      if (step >= maxSteps) throw new RangeError(`FakeClock.runUntilSettled: still pending after ${maxSteps} timers fired`);
      await this.advance(Math.max(0, next.due - this.#now));
    }
    return observed;
  }

  #earliest(): FakeTimer | undefined {
    const heap = this.#heap;
    while (heap.length > 0 && !this.#timers.has(heap[0]!.id)) this.#pop();
    return heap[0];
  }

  #push(t: FakeTimer): void {
    const heap = this.#heap;
    heap.push(t);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
      if (m === i) break;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  }
}

function before(a: FakeTimer, b: FakeTimer): boolean {
  return a.due < b.due || (a.due === b.due && a.id < b.id);
}
