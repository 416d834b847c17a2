/**
 * Admission limiters: what lets an attempt leave the pool toward one endpoint.
 *
 * A limiter answers two questions without side effects, `waitMs(now)` (0 when a call may
 * go now, else the exact wait until one may) and, once the pool has chosen the endpoint,
 * `take(now)` records the call. Selection asks every candidate and skips one that would
 * make it wait, so one endpoint's refill never stalls a call another could serve now.
 *
 * Endpoints counted together upstream share one limiter instance.
 */

export interface Limiter {
  /** 0 when a call may go now, else milliseconds until one may. */
  waitMs(now: number): number;
  /** Records one call leaving now. Only called right after `waitMs(now)` returned 0. */
  take(now: number): void;
  /** Calls per second this limiter currently allows. */
  readonly perSecond: number;
  /** Milliseconds between two calls at the steady rate. */
  readonly intervalMs: number;
}

/**
 * A token bucket: `burst` tokens (default: `perSecond`), refilled continuously at
 * `perSecond` tokens a second, not in fixed windows.
 */
export class TokenBucket implements Limiter {
  readonly perSecond: number;
  readonly burst: number;
  #tokens: number;
  #updatedAt: number;

  /** `tokens`: the initial fill. @default burst (a full bucket) */
  constructor(perSecond: number, burst: number, now: number, tokens = burst) {
    this.perSecond = perSecond;
    this.burst = burst;
    this.#tokens = Math.min(tokens, burst);
    this.#updatedAt = now;
  }

  /** A bucket with another rate and size, filled to the same fraction as this one (not full). */
  rescaled(perSecond: number, burst: number, now: number): TokenBucket {
    return new TokenBucket(perSecond, burst, now, (this.tokens(now) / this.burst) * burst);
  }

  get intervalMs(): number {
    return 1000 / this.perSecond;
  }

  /** Tokens available at `now` (fractional). */
  tokens(now: number): number {
    this.#refill(now);
    return this.#tokens;
  }

  waitMs(now: number): number {
    this.#refill(now);
    if (this.#tokens >= 1) return 0;
    return Math.max(1, Math.ceil(((1 - this.#tokens) * 1000) / this.perSecond));
  }

  /** Takes a token if one is available now. */
  tryTake(now: number): boolean {
    if (this.waitMs(now) !== 0) return false;
    this.#tokens -= 1;
    return true;
  }

  take(now: number): void {
    this.#refill(now);
    this.#tokens -= 1;
  }

  #refill(now: number): void {
    const elapsed = now - this.#updatedAt;
    if (elapsed <= 0) return;
    this.#updatedAt = now;
    this.#tokens = Math.min(this.burst, this.#tokens + (elapsed * this.perSecond) / 1000);
  }
}
