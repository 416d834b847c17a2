/**
 * A rolling counter over the last `buckets × bucketMs` milliseconds, in fixed buckets, so
 * its memory stays constant whatever the traffic. A sum over a span counts the buckets
 * that overlap it (the current one included), which is what "failures in the last five
 * minutes" needs: a ranking signal, not an exact figure.
 */
export class RollingCounter {
  readonly #bucketMs: number;
  /** A plain array: a small `Float64Array` costs about 1.3 µs to make (two per endpoint), a plain one 0.2 µs. */
  readonly #counts: number[];
  /** Absolute bucket number (`floor(now / bucketMs)`) of the newest bucket written. */
  #newest = -Infinity;
  /** When the newest bucket starts and its slot: `add` within it skips the division and modulo of a large bucket number. */
  #newestFrom = -Infinity;
  #newestSlot = 0;
  /** When the first event was counted: a young counter's rate is over its age, not its span. */
  #since = Infinity;
  /**
   * Sums already taken: for a span of `n` buckets, `[2n]` is the `#writes` it was taken at
   * and `[2n + 1]` the sum. A selection that ranks every endpoint of a tier asks each
   * counter the same sums on every call, and most counters have not changed since. Made on
   * the first `sum`, so a counter never summed costs nothing more.
   */
  #sums: Float64Array | undefined;
  /** Changes to the counts (an add, a move to a new bucket). */
  #writes = 0;

  constructor(buckets: number, bucketMs: number) {
    this.#bucketMs = bucketMs;
    this.#counts = new Array<number>(buckets).fill(0);
  }

  add(now: number, n = 1): void {
    this.#writes++;
    if (now >= this.#newestFrom && now - this.#newestFrom < this.#bucketMs) {
      this.#counts[this.#newestSlot]! += n;
      this.#since = Math.min(this.#since, now);
      return;
    }
    // A clock step backwards counts into the newest bucket rather than an older slot.
    const b = Math.max(Math.floor(now / this.#bucketMs), this.#newest);
    this.#advance(b);
    this.#counts[b % this.#counts.length]! += n;
    this.#since = Math.min(this.#since, now);
  }

  /** Events per second over the last `buckets` buckets (the current, partial one included). */
  rate(now: number, buckets: number): number {
    if (this.#since === Infinity) return 0;
    const start = Math.max((Math.floor(now / this.#bucketMs) - buckets + 1) * this.#bucketMs, this.#since);
    const covered = Math.max(1000, now - start);
    return this.sum(now, buckets * this.#bucketMs) / (covered / 1000);
  }

  /** Events in the last `spanMs` (rounded up to whole buckets). */
  sum(now: number, spanMs: number): number {
    // Within the newest bucket (or before it: a clock step backwards) the buckets stay.
    if (now >= this.#newestFrom + this.#bucketMs) this.#advance(Math.max(Math.floor(now / this.#bucketMs), this.#newest));
    const counts = this.#counts;
    const len = counts.length;
    const n = Math.min(len, Math.ceil(spanMs / this.#bucketMs));
    const sums = (this.#sums ??= new Float64Array(2 * len + 2).fill(-1));
    if (sums[2 * n] === this.#writes) return sums[2 * n + 1]!;
    let total = 0;
    for (let i = 0, slot = this.#newestSlot; i < n; i++, slot = slot === 0 ? len - 1 : slot - 1) total += counts[slot]!;
    sums[2 * n] = this.#writes;
    sums[2 * n + 1] = total;
    return total;
  }

  /** Moves to bucket `b` (callers pass `b >= #newest`; at `b === #newest` nothing is cleared). */
  #advance(b: number): void {
    this.#writes++;
    const len = this.#counts.length;
    // A counter never written (#newest = -Infinity) clears every slot.
    const gap = Math.min(len, b - this.#newest);
    for (let i = 1; i <= gap; i++) this.#counts[(((b - gap + i) % len) + len) % len] = 0;
    this.#newest = b;
    this.#newestFrom = b * this.#bucketMs;
    this.#newestSlot = ((b % len) + len) % len;
  }
}
