/**
 * An endpoint's quota: everything that decides *when* it may take the next call, as
 * opposed to *whether* it is healthy (the breaker's job).
 *
 * - a per-second limit: a token bucket (bursts up to `burst`) or a paced limiter (calls
 *   spaced, at most `perSecond` in any rolling second);
 * - a daily quota that stops admitting at a fraction of `perDay` until the next reset;
 * - a cooldown after a rate-limited answer (`retryAfterMs`, or a default);
 * - a parking until the next daily reset when the server says the day's quota is spent.
 *
 * Endpoints counted together upstream (keys of one account) share one `Quota`: the same
 * ceiling, the same pacing, the same cooldown when one of them overflows.
 *
 * A ceiling learned from the server (`ceilingPerSecond` in a classification) replaces the
 * configured one; with no per-second limit configured, it installs a paced limiter.
 */
import { DailyCounter, nextDailyReset } from './daily.js';
import { TokenBucket, type Limiter } from './bucket.js';
import { PacedLimiter } from './paced.js';
import type { SharedLimit } from './store.js';
import { invalidOption } from '../base/errors.js';
import { DEFAULTS } from '../options/defaults.js';
import { finite, oneOf, plainObject, positiveInteger } from '../options/validate.js';

export type RateLimitMode = 'bucket' | 'paced';

export interface ResolvedRateLimit {
  readonly perSecond: number | undefined;
  readonly burst: number | undefined;
  readonly mode: RateLimitMode;
  readonly marginMs: number;
  readonly perDay: number | undefined;
  readonly dailyStopFraction: number;
}

export class Quota {
  rate: TokenBucket | PacedLimiter | undefined;
  daily: DailyCounter | undefined;
  cooldownUntil = 0;
  parkedUntil = 0;
  readonly #marginMs: number;
  readonly #resetUtcHour: number;
  /** The calendar clock, for the daily reset (see daily.ts); `undefined`: `now` is the calendar. */
  readonly #wall: (() => number) | undefined;
  /** What a shared store counts for this quota; `undefined` without a `rateLimit`. */
  readonly shared: SharedLimit | undefined;
  /** The ceiling (and bucket size) before a degraded store scaled it down. */
  #undegraded: number | undefined;
  #undegradedBurst: number | undefined;

  constructor(limit: ResolvedRateLimit | undefined, resetUtcHour: number, now: number, key = '', wall?: () => number) {
    this.#resetUtcHour = resetUtcHour;
    this.#wall = wall;
    this.shared = limit === undefined ? undefined : { key, ...limit, dailyResetUtcHour: resetUtcHour };
    this.#marginMs = limit?.marginMs ?? 25;
    if (limit?.perSecond !== undefined) {
      this.rate =
        limit.mode === 'paced'
          ? new PacedLimiter(limit.perSecond, limit.marginMs)
          : new TokenBucket(limit.perSecond, limit.burst ?? Math.max(1, Math.ceil(limit.perSecond)), now);
    }
    if (limit?.perDay !== undefined) this.daily = new DailyCounter(limit.perDay, limit.dailyStopFraction, resetUtcHour, now, wall);
  }

  /**
   * 0 when a call may leave now, else milliseconds until one may, counting the short
   * waits only: the cooldown and the per-second limit.
   */
  waitMs(now: number): number {
    let wait = this.cooldownUntil > now ? this.cooldownUntil - now : 0;
    const rate: Limiter | undefined = this.rate;
    if (rate !== undefined) {
      const w = rate.waitMs(now);
      if (w > wait) wait = w;
    }
    return wait;
  }

  /**
   * 0 unless the day's quota is spent (parked by the server, or our count reached its
   * stop fraction); then milliseconds until the reset. An endpoint blocked this way is out
   * of the running, like one whose breaker is open, rather than merely busy.
   */
  blockedMs(now: number): number {
    let wait = this.parkedUntil > now ? this.parkedUntil - now : 0;
    if (this.daily !== undefined) {
      const w = this.daily.waitMs(now);
      if (w > wait) wait = w;
    }
    return wait;
  }

  take(now: number): void {
    this.rate?.take(now);
    this.daily?.take(now);
  }

  /** Calls per second currently allowed, `undefined` when unlimited. */
  get perSecond(): number | undefined {
    return this.rate?.perSecond;
  }

  /** Skips the endpoint(s) until `now + ms` (keeps a later cooldown already set). */
  coolDown(now: number, ms: number): void {
    if (now + ms > this.cooldownUntil) this.cooldownUntil = now + ms;
  }

  /** Adopts a ceiling the server told us about. */
  recalibrate(perSecond: number, now: number): void {
    if (this.rate instanceof PacedLimiter) this.rate.recalibrate(perSecond);
    else if (this.rate instanceof TokenBucket) this.rate = new TokenBucket(perSecond, Math.max(1, Math.ceil(perSecond)), now);
    else this.rate = new PacedLimiter(perSecond, this.#marginMs);
  }

  /** The shared store is unavailable: allow only `share` of the ceiling locally. */
  degrade(share: number, now: number): void {
    const rate = this.rate;
    if (rate === undefined || this.#undegraded !== undefined) return;
    this.#undegraded = rate.perSecond;
    // A bucket keeps the tokens it has: a store outage must not hand out a fresh burst.
    if (rate instanceof TokenBucket) {
      this.#undegradedBurst = rate.burst;
      this.rate = rate.rescaled(rate.perSecond * share, Math.max(1, rate.burst * share), now);
    } else rate.recalibrate(rate.perSecond * share);
  }

  /** The shared store is back: restore the ceiling (and a bucket's configured size). */
  restore(now: number): void {
    if (this.#undegraded === undefined) return;
    const ceiling = this.#undegraded;
    const burst = this.#undegradedBurst;
    this.#undegraded = undefined;
    this.#undegradedBurst = undefined;
    if (this.rate instanceof TokenBucket && burst !== undefined) this.rate = this.rate.rescaled(ceiling, burst, now);
    else this.recalibrate(ceiling, now);
  }

  /** The day's quota is spent: admit nothing until the next reset. Returns when that is. */
  park(now: number): number {
    const wall = this.#wall === undefined ? now : this.#wall();
    const until = this.daily !== undefined ? this.daily.exhaust(now) : now + (nextDailyReset(wall, this.#resetUtcHour) - wall);
    this.parkedUntil = until;
    return until;
  }
}

const MODES = ['bucket', 'paced'] as const;

/** Checks an endpoint's `rateLimit`. */
export function resolveRateLimit(field: string, value: unknown): ResolvedRateLimit | undefined {
  const rl = plainObject(field, value);
  if (rl === undefined) return undefined;
  const d = DEFAULTS.rateLimit;
  const perSecond = rl['perSecond'] === undefined ? undefined : finite(`${field}.perSecond`, rl['perSecond'], 0, 0, true);
  const perDay = rl['perDay'] === undefined ? undefined : positiveInteger(`${field}.perDay`, rl['perDay'], 0);
  if (perSecond === undefined && perDay === undefined) throw invalidOption(`${field}.perSecond`, 'a finite number > 0 (or a perDay)', undefined);
  const mode = oneOf(`${field}.mode`, rl['mode'], MODES, d.mode);
  const burst = rl['burst'] === undefined ? undefined : finite(`${field}.burst`, rl['burst'], 1, 1);
  if (burst !== undefined && mode === 'paced') throw invalidOption(`${field}.burst`, "nothing in 'paced' mode (paced calls never burst)", burst);
  const marginMs = finite(`${field}.marginMs`, rl['marginMs'], d.marginMs);
  const dailyStopFraction = finite(`${field}.dailyStopFraction`, rl['dailyStopFraction'], d.dailyStopFraction, 0, true);
  if (dailyStopFraction > 1) throw invalidOption(`${field}.dailyStopFraction`, 'a fraction in (0, 1]', dailyStopFraction);
  return { perSecond, burst, mode, marginMs, perDay, dailyStopFraction };
}
