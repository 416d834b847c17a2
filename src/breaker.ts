/**
 * A per-endpoint circuit breaker counting consecutive failures.
 *
 * Closed: every attempt goes through. After `threshold` consecutive failures it opens
 * for `cooldownMs`; while open nothing goes through. Once the cooldown has passed it is
 * half-open: exactly one attempt, the probe, is let through, and everyone else is turned
 * away until that probe reports. A successful probe closes it and resets the cooldown to
 * the base; a failed probe re-opens it with the cooldown doubled, up to `maxCooldownMs`.
 *
 * Three kinds of outcome, as in the attempt table of ARCHITECTURE.md:
 * - success: closes the breaker if open and clears the failure run;
 * - reachable (the endpoint answered, just not usefully): closes it if open but keeps the
 *   failure run, so `transient, permanent, transient, permanent, transient` still opens
 *   at a threshold of 3;
 * - failure (transient or timeout): extends the run and may open it.
 * Anything else (rate-limited, cancelled) touches nothing but releases a held probe slot.
 *
 * Each attempt carries a ticket taken when it starts: the breaker's `generation` (bumped
 * on every opening) and, for the probe, a fresh probe epoch. A failure whose generation is
 * stale started before the breaker opened, so it neither counts again nor passes for a
 * failed probe; a release or result with a stale probe epoch cannot free or judge a newer
 * probe. The breaker is pure state over the `now` it is given: no timers, no clock.
 */

export interface BreakerOptions {
  /** Consecutive failures that open the breaker. @default 5 */
  readonly threshold: number;
  /** First open period. @default 5000 */
  readonly cooldownMs: number;
  /** Ceiling for the doubling cooldown after failed probes. @default 60000 */
  readonly maxCooldownMs: number;
}

/** What `breakerState()` reports. */
export type BreakerState = 'closed' | 'half-open' | { readonly state: 'open'; readonly untilMs: number };

export class Breaker {
  readonly #opts: BreakerOptions;
  #open = false;
  #failures = 0;
  #openUntil = 0;
  #cooldownMs: number;
  #generation = 0;
  #probeEpoch = 0;
  #epochSeq = 0;

  constructor(opts: BreakerOptions) {
    this.#opts = opts;
    this.#cooldownMs = opts.cooldownMs;
  }

  /** Bumped each time the breaker opens; part of every attempt's ticket. */
  get generation(): number {
    return this.#generation;
  }

  /** Consecutive failures counted so far. */
  get failures(): number {
    return this.#failures;
  }

  /** The cooldown the breaker would use (or used) for its current opening. */
  get cooldownMs(): number {
    return this.#cooldownMs;
  }

  /** When the current open period ends (meaningful only while open). */
  get openUntil(): number {
    return this.#openUntil;
  }

  /** True while a half-open probe is out. */
  get probing(): boolean {
    return this.#probeEpoch !== 0;
  }

  /** Whether an attempt may start now: closed, or half-open with the probe slot free. */
  admits(now: number): boolean {
    return !this.#open || (now >= this.#openUntil && this.#probeEpoch === 0);
  }

  /** Open and still inside the cooldown: nothing, not even a health probe, should go. */
  isStrictlyOpen(now: number): boolean {
    return this.#open && now < this.#openUntil;
  }

  /**
   * Registers an attempt that `admits()` let through. Returns its probe epoch when it is
   * the half-open probe, or 0 for an ordinary attempt.
   */
  enter(now: number): number {
    if (!this.#open || now < this.#openUntil) return 0;
    this.#probeEpoch = ++this.#epochSeq;
    return this.#probeEpoch;
  }

  /** A success. Returns true when it closed the breaker. */
  recordSuccess(): boolean {
    this.#failures = 0;
    if (!this.#open) return false;
    this.#close();
    this.#cooldownMs = this.#opts.cooldownMs;
    return true;
  }

  /** An answer that proves the endpoint is up without being a success. Returns true when it closed the breaker. */
  recordReachable(): boolean {
    if (!this.#open) return false;
    this.#close();
    this.#cooldownMs = this.#opts.cooldownMs;
    return true;
  }

  /** A failure of an attempt that started at `generation`. Returns true when this failure opened the breaker. */
  recordFailure(generation: number, probe: number, now: number): boolean {
    if (probe !== 0 && probe === this.#probeEpoch) {
      // The probe failed: re-open for a longer cooldown.
      this.#probeEpoch = 0;
      this.#cooldownMs = Math.min(this.#cooldownMs * 2, this.#opts.maxCooldownMs);
      this.#openAt(now);
      return true;
    }
    if (this.#open || generation !== this.#generation) return false;
    this.#failures++;
    if (this.#failures < this.#opts.threshold) return false;
    this.#openAt(now);
    return true;
  }

  /** Gives back a probe slot without a verdict (the probe was cancelled or inconclusive). */
  release(probe: number): void {
    if (probe !== 0 && probe === this.#probeEpoch) this.#probeEpoch = 0;
  }

  /** Milliseconds until a probe may go, 0 when the breaker admits now (or would but for an out-standing probe). */
  waitMs(now: number): number {
    return this.#open && now < this.#openUntil ? this.#openUntil - now : 0;
  }

  state(now: number): BreakerState {
    if (!this.#open) return 'closed';
    if (now < this.#openUntil) return { state: 'open', untilMs: this.#openUntil };
    return 'half-open';
  }

  #openAt(now: number): void {
    this.#open = true;
    this.#openUntil = now + this.#cooldownMs;
    this.#generation++;
  }

  #close(): void {
    this.#open = false;
    this.#probeEpoch = 0;
  }
}
