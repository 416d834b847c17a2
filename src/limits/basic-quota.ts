/**
 * What every endpoint's quota has, with or without the rate-limit feature (`features.limits`):
 * the cooldown after a rate-limited answer (`rateLimitCooldownMs`, doubled per such answer in
 * a row), a parking, and the waits, etas and stats the core reads from them.
 *
 * The limiters, daily counter, learned ceiling, adaptive limit and wait queue are the
 * feature's (`Quota` in quota.ts extends this class and fills them); here they are only
 * typed, so a pool built without the feature bundles none of their code. This class's
 * methods read those fields, which stay `undefined` in a pool without the feature.
 */
import type { TokenBucket, Limiter } from './bucket.js';
import type { PacedLimiter } from './paced.js';
import type { DailyCounter } from './daily.js';
import type { LearnedCeiling } from './ceiling.js';
import type { AdaptiveLimit } from './adaptive.js';
import type { WaitQueue } from './waiters.js';
import type { SharedLimit } from './store.js';

export class BasicQuota {
  rate: TokenBucket | PacedLimiter | undefined = undefined;
  daily: DailyCounter | undefined = undefined;
  cooldownUntil = 0;
  parkedUntil = 0;
  /** The ceiling learned from the server, once one was. */
  learned: LearnedCeiling | undefined = undefined;
  /** Rate-limited answers without a hint in a row (each doubles the cooldown); reset by a success. */
  limitedRun = 0;
  /** Calls queued for this quota's next token, once any did. */
  waiters: WaitQueue | undefined = undefined;
  /** What a shared store counts for this quota; `undefined` without a `rateLimit`. */
  readonly shared: SharedLimit | undefined;
  /** Endpoints of one group (`groups`) share this quota. */
  readonly grouped: boolean;
  /** The per-second limit that tunes itself from bare rate-limited answers, when `rateLimit.adaptive` is set. */
  readonly adaptive: AdaptiveLimit | undefined;

  constructor(shared?: SharedLimit, grouped = false, adaptive?: AdaptiveLimit) {
    this.shared = shared;
    this.grouped = grouped;
    this.adaptive = adaptive;
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

  /**
   * Milliseconds until the call `ahead + 1` places back in line may leave: the current
   * wait plus one interval of the steady rate per call ahead.
   */
  etaMs(now: number, ahead: number): number {
    const wait = this.waitMs(now);
    const rate = this.rate;
    return rate === undefined ? wait : wait + ahead * rate.intervalMs;
  }

  /** Calls queued for this quota's next token. */
  get queued(): number {
    return this.waiters === undefined ? 0 : this.waiters.size;
  }

  take(now: number): void {
    this.rate?.take(now);
    this.daily?.take(now);
    this.adaptive?.taken(now);
  }

  /** Calls per second currently allowed, `undefined` when unlimited. */
  get perSecond(): number | undefined {
    return this.rate?.perSecond;
  }

  /** Skips the endpoint(s) until `now + ms` (keeps a later cooldown already set). */
  coolDown(now: number, ms: number): void {
    if (now + ms > this.cooldownUntil) this.cooldownUntil = now + ms;
  }

  /** The shared store is unavailable (see Quota): nothing to scale without a per-second limit. */
  degrade(_share: number, _now: number, _holdMs?: number): void {}

  /** The shared store is back (see Quota). */
  restore(_now: number): void {}
}
