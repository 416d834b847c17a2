/**
 * A paced limiter: calls are spaced, never sent in a burst.
 *
 * Calls leave at least `(1000 / perSecond) × (1 + marginMs / 1000)` ms apart, and at most
 * `floor(perSecond)` of them in any `1000 + marginMs` ms, on a schedule: a start a little
 * late (a timer's rounding) is recorded up to 1 ms earlier, within the margin (`#creditMs`),
 * so two starts are never closer than `1000 / perSecond`. Upstream windows are not aligned
 * with ours and two paths to the server do not have the same latency, so the server may
 * see two of our calls closer together than we sent them; the margin stretches every
 * second of our pacing by `marginMs`, so jitter up to that much does not put one call too
 * many in the server's second. It costs the same share at every rate (2.5 % with the
 * default 25 ms): a 3/s key is spaced 342 ms apart, a 20/s key 51.25 ms apart.
 *
 * A key's own level inside a group (see quota.ts `keyLevel`) is not spaced
 * (`spaced = false`): only the window applies. The group's limiter already spaces the
 * members' calls; spacing each member as well would make them miss the group's slots
 * (two members paced at 3/s and 2/s under a 5/s group carried 4 calls a second, not 5).
 *
 * Memory is bounded whatever the rate: the window is a ring of the last
 * `slots = min(max(1, floor(perSecond)), MAX_SLOTS)` start times. Above `MAX_SLOTS` calls
 * a second the window covers `slots` spacings instead of a second: the same rate, checked
 * over a shorter span.
 */
import type { Limiter } from './bucket.js';

/** The most start times a paced limiter remembers. */
export const MAX_SLOTS = 64;

/** How late after its slot a start may be and still be recorded on it: a timer's rounding, with the clock's jitter. */
const ROUNDING_MS = 2;

export class PacedLimiter implements Limiter {
  #perSecond: number;
  readonly marginMs: number;
  #spacingMs: number;
  /** Start times of the last `slots` calls, oldest at `#head`. */
  #ring: number[];
  #head = 0;
  #last = -Infinity;
  /** The span the ring's calls must fit in. */
  #windowMs = 1000;
  /**
   * How much of a late start is forgiven (at most 1 ms, within the margin): hosts fire
   * timers on the loop's whole millisecond, behind the clock's readings, and that lateness
   * must not push every later slot back.
   */
  #creditMs = 0;
  /** The same for the window. */
  #creditWindowMs = 0;

  /** Whether calls are spaced (`false`: only the window applies). */
  readonly spaced: boolean;

  constructor(perSecond: number, marginMs: number, spaced = true) {
    this.marginMs = marginMs;
    this.spaced = spaced;
    this.#perSecond = perSecond;
    this.#spacingMs = (1000 / perSecond) * (1 + marginMs / 1000);
    this.#ring = this.#newRing(perSecond);
  }

  #newRing(perSecond: number): number[] {
    const slots = Math.max(1, Math.min(MAX_SLOTS, Math.floor(perSecond)));
    this.#windowMs = perSecond >= 1 && perSecond <= MAX_SLOTS ? 1000 + this.marginMs : slots * this.#spacingMs;
    const stretch = this.marginMs / (1000 + this.marginMs);
    this.#creditMs = Math.min(1, this.#spacingMs * stretch);
    this.#creditWindowMs = Math.min(1, this.#windowMs * stretch);
    return new Array<number>(slots).fill(-Infinity);
  }

  /** Milliseconds between two calls at the steady rate. */
  get intervalMs(): number {
    // Never below the spacing: the window is `slots` spacings, or 1000 + margin with
    // slots = floor(perSecond) <= perSecond.
    return this.#windowMs / this.#ring.length;
  }

  get perSecond(): number {
    return this.#perSecond;
  }

  waitMs(now: number): number {
    const spacing = this.spaced ? this.#last + this.#spacingMs - now : 0;
    // The oldest of the last `slots` calls must have left the window.
    const window = this.#ring[this.#head]! + this.#windowMs - now;
    return Math.ceil(Math.max(spacing, window, 0));
  }

  take(now: number): void {
    // A start at most `ROUNDING_MS` after its slot (a timer's rounding, not a call that
    // came later) is recorded up to `#creditMs` earlier.
    const late = now - this.#last - this.#spacingMs;
    this.#last = this.spaced && late > 0 && late <= ROUNDING_MS ? now - Math.min(late, this.#creditMs) : now;
    const lateInWindow = now - this.#ring[this.#head]! - this.#windowMs;
    this.#ring[this.#head] = lateInWindow > 0 && lateInWindow <= ROUNDING_MS ? now - Math.min(lateInWindow, this.#creditWindowMs) : now;
    this.#head = (this.#head + 1) % this.#ring.length;
  }

  /** Records a start as the ring held it (history carried over), with no credit on top. */
  replay(at: number): void {
    this.#last = at;
    this.#ring[this.#head] = at;
    this.#head = (this.#head + 1) % this.#ring.length;
  }

  /** Adopts a new ceiling (learned from the server), keeping the recent history. */
  recalibrate(perSecond: number): void {
    // Oldest first; unused slots (-Infinity) are the oldest, so replaying them is a no-op,
    // and replaying more starts than the new ring holds leaves the newest in it.
    const recent = this.#ordered();
    this.#perSecond = perSecond;
    this.#spacingMs = (1000 / perSecond) * (1 + this.marginMs / 1000);
    this.#ring = this.#newRing(perSecond);
    this.#head = 0;
    for (const t of recent) this.replay(t);
  }

  /** The start times it remembers (its last `slots`), oldest first: for a limiter that takes over from this one. */
  recent(): number[] {
    return this.#ordered().filter((t) => t > -Infinity);
  }

  #ordered(): number[] {
    return [...this.#ring.slice(this.#head), ...this.#ring.slice(0, this.#head)];
  }
}
