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
 * configured one; with no per-second limit configured, it installs a paced limiter. It is
 * clamped to a bounded range and recovers after a quiet period (see ceiling.ts).
 *
 * Rate-limited answers without a hint cool the quota down for `rateLimitCooldownMs`,
 * doubled for every further such answer in a row (capped), until a success resets it.
 *
 * Calls waiting for this quota's next token queue on `waiters` (see waiters.ts), which
 * the pool attaches.
 *
 * The fields and methods the core reads are `BasicQuota`'s (basic-quota.ts): a pool built
 * without the rate-limit feature gives its endpoints that class, with none of this code.
 */
import { DailyCounter, nextDailyReset, resetHour } from './daily.js';
import { TokenBucket } from './bucket.js';
import { PacedLimiter } from './paced.js';
import type { SharedLimit } from './store.js';
import { CONFIGURED_MAX_PER_SECOND, LearnedCeiling, clampLearned, resolveCeilingRecovery, type CeilingRecovery } from './ceiling.js';
import { BasicQuota } from './basic-quota.js';
import { AdaptiveLimit, resolveAdaptive, type ResolvedAdaptive } from './adaptive.js';
import { invalidOption } from '../base/errors.js';
import { DEFAULTS } from '../options/defaults.js';
import type { RateLimitOptions } from '../options/options.js';
import { finite, oneOf, optionsObject, positiveInteger, type KnownKeys } from '../options/validate.js';
import type { FeatureOptions } from '../features.js';

export type RateLimitMode = 'bucket' | 'paced';

export interface ResolvedRateLimit {
  readonly perSecond: number | undefined;
  readonly burst: number | undefined;
  readonly mode: RateLimitMode;
  readonly marginMs: number;
  readonly perDay: number | undefined;
  readonly dailyStopFraction: number;
  /** A limit that tunes itself (adaptive.ts); `perSecond` is then its start rate. */
  readonly adaptive?: ResolvedAdaptive;
  /** The endpoint's quota's name in the shared store, when not its own name. */
  readonly sharedName?: string;
}

/** How many accepted start times a group's quota keeps (see `acceptedMoreThan`). */
export const ACCEPTED_KEPT = 64;

export class Quota extends BasicQuota {
  readonly #marginMs: number;
  readonly #resetUtcHour: number;
  /** The calendar clock, for the daily reset (see daily.ts); `undefined`: `now` is the calendar. */
  readonly #wall: (() => number) | undefined;
  /** The ceiling (and bucket size) before a degraded store scaled it down. */
  #undegraded: number | undefined;
  #undegradedBurst: number | undefined;
  /** The share a degraded store allows (set by `degrade`). */
  #share = 1;
  /** The configured per-second rate, if any: where a learned ceiling recovers to. */
  readonly configured: number | undefined;
  /** In a group: the last ceiling a member reported as its own (two members saying the same number describe the group). */
  lastKeyHint: { readonly perSecond: number; readonly from: string; readonly at: number } | undefined;
  /** In a group: start times of the last `ACCEPTED_KEPT` accepted attempts (a ring), once any was. */
  #accepted: number[] | undefined;
  #acceptedNext = 0;
  /** A grouped key's own level: paced by its window only (see paced.ts). */
  readonly #spaced: boolean;

  constructor(limit: ResolvedRateLimit | undefined, resetUtcHour: number, now: number, key = '', wall?: () => number) {
    const { sharedName, ...shared } = limit ?? {};
    super(
      limit === undefined ? undefined : { ...(shared as ResolvedRateLimit), key: sharedName !== undefined && key.startsWith('endpoint:') ? `endpoint:${sharedName}` : key, dailyResetUtcHour: resetUtcHour },
      key.startsWith('group:'),
      limit?.adaptive === undefined ? undefined : new AdaptiveLimit(limit.adaptive, limit.perSecond!, now),
    );
    this.#resetUtcHour = resetUtcHour;
    this.#wall = wall;
    this.#marginMs = limit?.marginMs ?? 25;
    this.configured = limit?.perSecond;
    this.#spaced = !key.startsWith('key:');
    if (limit?.perSecond !== undefined) {
      this.rate =
        limit.mode === 'paced'
          ? new PacedLimiter(limit.perSecond, limit.marginMs, this.#spaced)
          : new TokenBucket(limit.perSecond, limit.burst ?? Math.max(1, Math.ceil(limit.perSecond)), now);
    }
    if (limit?.perDay !== undefined) this.daily = new DailyCounter(limit.perDay, limit.dailyStopFraction, resetUtcHour, now, wall);
  }

  /** The pacing margin a limiter installed by a learned ceiling uses. */
  get marginMs(): number {
    return this.#marginMs;
  }

  /** In a group, an attempt started at `startedAt` was accepted (see `acceptedMoreThan`). */
  noteAccepted(startedAt: number): void {
    if (!this.grouped) return;
    // Appends until the ring is full (#acceptedNext is then its length), then replaces the oldest.
    (this.#accepted ??= [])[this.#acceptedNext] = startedAt;
    this.#acceptedNext = (this.#acceptedNext + 1) % ACCEPTED_KEPT;
  }

  /**
   * Whether the server accepted more than `n` of this group's attempts that started within
   * `spanMs` of one another, among those started since `since`. With `spanMs` one second
   * less the pacing margin (the most the path's jitter can stretch a span by), the server
   * then admitted more than `n` calls in one of its seconds: `n` is not the group's limit.
   * Other processes' calls only add to what the server saw, so the proof holds for a
   * fleet too. `false` when it cannot tell (`n` of `ACCEPTED_KEPT` or more, or under 1).
   */
  acceptedMoreThan(n: number, spanMs: number, since: number): boolean {
    const ring = this.#accepted;
    const k = Math.floor(n);
    // With fewer than k + 1 starts the loop below finds nothing.
    if (ring === undefined || n < 1) return false;
    const recent = ring.filter((t) => t >= since).sort((a, b) => a - b);
    for (let i = 0; i + k < recent.length; i++) if (recent[i + k]! - recent[i]! < spanMs) return true;
    return false;
  }

  /** The ceiling in force when the shared store answers (a degraded store scales `perSecond` down). */
  get ceilingPerSecond(): number | undefined {
    return this.#undegraded ?? this.rate?.perSecond;
  }

  /**
   * Adopts a ceiling the server told us about, clamped into the learned range (a little
   * under it when the server repeats the number in force for a call `sentAt` paced by it,
   * see ceiling.ts); returns the value adopted. `target`: where recovery stops (default: the configured rate, else
   * the highest value ever learned).
   */
  learn(perSecond: number, now: number, target = this.configured, sentAt = now, weak = false): number {
    let value = clampLearned(perSecond);
    if (this.learned === undefined) (this.learned = new LearnedCeiling(value, target ?? value, now)).weak = weak;
    else {
      this.learned.set(value, now, target, sentAt, weak);
      value = this.learned.value;
    }
    this.#apply(value, now);
    return value;
  }

  /** Recovery steps of a learned ceiling due by `now`; returns the new ceiling when it rose. */
  recover(now: number, r: CeilingRecovery, pressed = false): number | undefined {
    const l = this.learned;
    if (l === undefined || !l.recover(now, r, pressed)) return undefined;
    this.#apply(l.value, now);
    return l.value;
  }

  /**
   * `recalibrate` applies it at the degraded share while the shared store is down, and
   * `restore` brings it back. With an adaptive limit too, the lower of the two is in force.
   */
  #apply(value: number, now: number): void {
    const a = this.adaptive;
    this.recalibrate(a === undefined || a.rate >= value ? value : a.rate, now);
  }

  /** The adaptive limit changed: the lower of it and a learned ceiling is in force. */
  adapted(now: number): void {
    const l = this.learned;
    const r = this.adaptive!.rate;
    this.recalibrate(l === undefined || l.value >= r ? r : l.value, now);
  }

  /** Replaces the per-second ceiling (installing a paced limiter when there is none). */
  recalibrate(perSecond: number, now: number): void {
    if (this.#undegraded !== undefined) {
      this.#undegraded = perSecond;
      this.#undegradedBurst = Math.max(1, Math.ceil(perSecond));
      const scaled = perSecond * this.#share;
      // No fresh burst while degraded: a bucket keeps its fill.
      if (this.rate instanceof TokenBucket) this.rate = this.rate.rescaled(scaled, Math.max(1, this.#undegradedBurst * this.#share), now);
      else this.#setRate(scaled, now);
      return;
    }
    this.#setRate(perSecond, now);
  }

  #setRate(perSecond: number, now: number): void {
    if (this.rate instanceof PacedLimiter) this.rate.recalibrate(perSecond);
    // An adaptive limit moves often: its bucket keeps its fill rather than starting full.
    else if (this.rate instanceof TokenBucket && this.adaptive !== undefined) this.rate = this.rate.rescaled(perSecond, Math.max(1, Math.ceil(perSecond)), now);
    else if (this.rate instanceof TokenBucket) this.rate = new TokenBucket(perSecond, Math.max(1, Math.ceil(perSecond)), now);
    else this.rate = new PacedLimiter(perSecond, this.#marginMs, this.#spaced);
  }

  /**
   * The shared store is unavailable: allow only `share` of the ceiling locally. A bucket
   * starts at most `share` full: its tokens only counted this process's calls while the
   * fleet shared the quota, so a nearly full bucket would add a burst on top of what the
   * others just sent.
   */
  override degrade(share: number, now: number, holdMs = 0): void {
    const rate = this.rate;
    this.#share = share;
    if (rate === undefined || this.#undegraded !== undefined) return;
    if (holdMs > 0) this.coolDown(now, holdMs);
    this.#undegraded = rate.perSecond;
    if (rate instanceof TokenBucket) {
      this.#undegradedBurst = rate.burst;
      const burst = Math.max(1, rate.burst * share);
      this.rate = new TokenBucket(rate.perSecond * share, burst, now, Math.min((rate.tokens(now) / rate.burst) * burst, share * burst));
    } else rate.recalibrate(rate.perSecond * share);
  }

  /** The shared store is back: restore the ceiling (and a bucket's configured size). */
  override restore(now: number): void {
    if (this.#undegraded === undefined) return;
    const ceiling = this.#undegraded;
    const burst = this.#undegradedBurst;
    this.#undegraded = undefined;
    this.#undegradedBurst = undefined;
    if (this.rate instanceof TokenBucket && burst !== undefined) this.rate = this.rate.rescaled(ceiling, burst, now);
    else this.#setRate(ceiling, now);
  }

  /** How long until the next daily reset. */
  resetInMs(now: number): number {
    const wall = this.#wall === undefined ? now : this.#wall();
    return nextDailyReset(wall, this.#resetUtcHour) - wall;
  }

  /** The day's quota is spent: admit nothing until the next reset. Returns when that is. */
  park(now: number): number {
    const until = this.daily !== undefined ? this.daily.exhaust(now) : now + this.resetInMs(now);
    this.parkedUntil = until;
    return until;
  }
}

/**
 * A grouped key's own level (see call/ceilings.ts): no limit of its own until a hint
 * describes the key, paced with the group's margin (the key's path has the same jitter),
 * parked alone when the key's own day is spent. `wall` is the calendar, for that reset.
 */
export function keyLevel(group: Quota, endpoint: string, resetUtcHour: number, now: number, wall?: () => number): Quota {
  const limit = { perSecond: undefined, burst: undefined, mode: 'paced', marginMs: group.marginMs, perDay: undefined, dailyStopFraction: 1 } as const;
  return new Quota(limit, resetUtcHour, now, `key:${endpoint}`, wall);
}

const MODES = ['bucket', 'paced'] as const;
const RATE_LIMIT_KEYS: Record<keyof RateLimitOptions, true> & KnownKeys = {
  perSecond: true,
  mode: true,
  burst: true,
  marginMs: true,
  perDay: true,
  dailyStopFraction: true,
  adaptive: true,
  sharedName: true,
};

/** The unknown-option hint for `perMinute` and `perHour`. */
const PER_SECOND_ONLY = 'limits are per second or per day: n per minute is perSecond: n / 60';

/** Checks an endpoint's `rateLimit`. */
export function resolveRateLimit(field: string, value: unknown): ResolvedRateLimit | undefined {
  const rl = optionsObject(field, value, RATE_LIMIT_KEYS, {
    rps: 'perSecond',
    requestsPerSecond: 'perSecond',
    daily: 'perDay',
    perMinute: PER_SECOND_ONLY,
    perHour: PER_SECOND_ONLY,
  });
  if (rl === undefined) return undefined;
  const d = DEFAULTS.rateLimit;
  let perSecond = rl['perSecond'] === undefined ? undefined : finite(`${field}.perSecond`, rl['perSecond'], 0, 0, true);
  if (perSecond !== undefined && perSecond > CONFIGURED_MAX_PER_SECOND) throw invalidOption(`${field}.perSecond`, `a number of calls per second up to ${CONFIGURED_MAX_PER_SECOND}`, perSecond);
  const adaptive = resolveAdaptive(`${field}.adaptive`, rl['adaptive'], perSecond);
  // An adaptive limit with no perSecond starts at its ceiling.
  if (adaptive !== undefined) perSecond ??= adaptive.max;
  const perDay = rl['perDay'] === undefined ? undefined : positiveInteger(`${field}.perDay`, rl['perDay'], 0);
  if (perSecond === undefined && perDay === undefined) throw invalidOption(`${field}.perSecond`, 'a finite number > 0 (or a perDay)', undefined);
  const mode = oneOf(`${field}.mode`, rl['mode'], MODES, d.mode);
  const burst = rl['burst'] === undefined ? undefined : finite(`${field}.burst`, rl['burst'], 1, 1);
  if (burst !== undefined && mode === 'paced') throw invalidOption(`${field}.burst`, "nothing in 'paced' mode (paced calls never burst)", burst);
  const marginMs = finite(`${field}.marginMs`, rl['marginMs'], d.marginMs);
  const dailyStopFraction = finite(`${field}.dailyStopFraction`, rl['dailyStopFraction'], d.dailyStopFraction, 0, true);
  if (dailyStopFraction > 1) throw invalidOption(`${field}.dailyStopFraction`, 'a fraction in (0, 1]', dailyStopFraction);
  const r: ResolvedRateLimit = adaptive === undefined ? { perSecond, burst, mode, marginMs, perDay, dailyStopFraction } : { perSecond, burst, mode, marginMs, perDay, dailyStopFraction, adaptive };
  const sharedName = rl['sharedName'];
  if (sharedName === undefined) return r;
  if (typeof sharedName !== 'string' || sharedName === '') throw invalidOption(`${field}.sharedName`, 'a non-empty string', sharedName);
  return { ...r, sharedName };
}

/** The pool's `ceilingRecovery` and `dailyResetUtcHour` (the rate-limit feature's options, features.ts). */
export const limitsOptions: FeatureOptions = (o) => ({ ceilingRecovery: resolveCeilingRecovery(o['ceilingRecovery']), dailyResetUtcHour: resetHour(o['dailyResetUtcHour']) });
