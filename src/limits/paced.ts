/**
 * A paced limiter: calls are spaced, never sent in a burst.
 *
 * A call may leave only when both hold: the rolling one-second window has a free slot
 * (at most `perSecond` calls in any 1,000 ms), and the previous call left at least
 * `1000 / perSecond + marginMs` ago. Upstream windows are not aligned with ours and two
 * paths to the server do not have the same latency, so three calls fired in the same
 * second at a 3/s key are rejected far more often than three calls spaced 358 ms apart;
 * the margin absorbs that jitter.
 *
 * Memory is bounded whatever the rate: the window is a ring of the last
 * `min(floor(perSecond), MAX_SLOTS)` start times. Above `MAX_SLOTS` calls a second the
 * window shrinks in proportion (at most `MAX_SLOTS` calls in any `MAX_SLOTS / perSecond`
 * seconds), which is the same rate, checked over a shorter span.
 */
import type { Limiter } from './bucket.js';

/** The most start times a paced limiter remembers. */
export const MAX_SLOTS = 64;

export class PacedLimiter implements Limiter {
  #perSecond: number;
  readonly marginMs: number;
  #spacingMs: number;
  /** Start times of the last `slots` calls, oldest at `#head`. */
  #ring: number[];
  #head = 0;
  #last = Number.NEGATIVE_INFINITY;
  /** The span the ring's calls must fit in: one second, shorter above `MAX_SLOTS` per second. */
  #windowMs = 1000;

  constructor(perSecond: number, marginMs: number) {
    this.marginMs = marginMs;
    this.#perSecond = perSecond;
    this.#spacingMs = 1000 / perSecond + marginMs;
    this.#ring = this.#newRing(perSecond);
  }

  #newRing(perSecond: number): number[] {
    const slots = Math.max(1, Math.min(MAX_SLOTS, Math.floor(perSecond)));
    this.#windowMs = perSecond > MAX_SLOTS ? (MAX_SLOTS * 1000) / perSecond : 1000;
    return new Array<number>(slots).fill(Number.NEGATIVE_INFINITY);
  }

  /** Milliseconds between two calls at the steady rate (spacing, margin included). */
  get intervalMs(): number {
    return this.#spacingMs;
  }

  get perSecond(): number {
    return this.#perSecond;
  }

  waitMs(now: number): number {
    const spacing = this.#last + this.#spacingMs - now;
    // The oldest of the last `slots` calls must have left the window.
    const window = this.#ring[this.#head]! + this.#windowMs - now;
    const wait = spacing > window ? spacing : window;
    return wait > 0 ? Math.ceil(wait) : 0;
  }

  take(now: number): void {
    this.#last = now;
    this.#ring[this.#head] = now;
    this.#head = (this.#head + 1) % this.#ring.length;
  }

  /** Adopts a new ceiling (learned from the server), keeping the recent history. */
  recalibrate(perSecond: number): void {
    const recent = this.#ordered().filter((t) => t !== Number.NEGATIVE_INFINITY);
    this.#perSecond = perSecond;
    this.#spacingMs = 1000 / perSecond + this.marginMs;
    this.#ring = this.#newRing(perSecond);
    this.#head = 0;
    for (const t of recent.slice(-this.#ring.length)) this.take(t);
  }

  #ordered(): number[] {
    return [...this.#ring.slice(this.#head), ...this.#ring.slice(0, this.#head)];
  }
}
