/**
 * The pool's options, their defaults, and their validation.
 *
 * Everything is checked once, in the constructor (and per call for `execute`'s options),
 * and a mistake is reported as a `PoolError` with code `INVALID_OPTIONS` whose message
 * names the field, what was expected and what was given.
 */
import type { BackoffOptions, Jitter } from '../call/backoff.js';
import type { BreakerOptions } from '../health/breaker.js';
import type { Classifier } from '../base/classify.js';
import type { AttemptContext } from '../call/context.js';
import type { Clock, RandomSource } from '../base/clock.js';
import { invalidOption } from '../base/errors.js';
import type { EventListener } from '../base/events.js';
import type { StoreOptions } from '../limits/store.js';
import type { RetryBudgetOptions } from '../limits/budget.js';
import type { MetricsSink } from '../base/metrics.js';

export type Priority = 'high' | 'low';

/**
 * How an endpoint is chosen within a priority tier: `ordered` (first healthy in config
 * order), `round-robin` (weighted rotation), `random` (a random start per call: spreads
 * the load of many stateless callers that each make few calls), `health` (fewest recent
 * failures, then least used), `latency` (power of two choices over peak-EWMA latency × load).
 */
export type Strategy = 'ordered' | 'round-robin' | 'random' | 'health' | 'latency';

export interface RateLimitOptions {
  /** Calls per second. Optional when only `perDay` is set. */
  readonly perSecond?: number;
  /** `bucket`: a token bucket (bursts allowed); `paced`: calls spaced by `1000 / perSecond + marginMs`, at most `perSecond` in any second. @default 'bucket' */
  readonly mode?: 'bucket' | 'paced';
  /** Bucket size (bucket mode). @default perSecond (rounded up) */
  readonly burst?: number;
  /** Extra spacing between paced calls. @default 25 */
  readonly marginMs?: number;
  /** Calls per day; admission stops at `dailyStopFraction` of it until the next reset. */
  readonly perDay?: number;
  /** Share of `perDay` at which admission stops. @default 0.95 */
  readonly dailyStopFraction?: number;
}

export interface EndpointConfig<C> {
  /** Unique, non-empty; used in metrics, events, `pin` and `exclude`. Never a secret. */
  readonly name: string;
  /** The connection value handed to the operation; the pool never inspects it. */
  readonly conn: C;
  /** `high` endpoints are used before any `low` one. @default 'high' */
  readonly priority?: Priority;
  /** Share of the rotation under `round-robin` and of the picks under `random`; inert under `ordered`. @default 1 */
  readonly weight?: number;
  /** Preemptive rate limit. @default none */
  readonly rateLimit?: RateLimitOptions;
  /** Attempts in flight at once on this endpoint. @default unbounded */
  readonly maxInFlight?: number;
}

/** How many attempts a call may make. */
export type RetryMode = 'none' | 'until-deadline' | { readonly maxAttempts: number };

/** What a call does when no endpoint admits it: fail at once, or wait for a breaker to let a probe through. */
export type BreakerMode = 'fail-fast' | 'wait';

export interface PoolOptions<C> {
  readonly endpoints: readonly EndpointConfig<C>[];
  /** Maps an operation's error to an error class (see `ErrorClass`). */
  readonly classify: Classifier;
  /** @default 'ordered' */
  readonly strategy?: Strategy;
  /** Attempts per call, the first included (the default retry mode). @default 3 */
  readonly maxAttempts?: number;
  /** Timeout of one attempt. @default 10000 */
  readonly attemptTimeoutMs?: number;
  /** Whole-call deadline, waits included. @default 30000 */
  readonly deadlineMs?: number;
  /** Retry delays. @default { initialMs: 100, maxMs: 10000, jitter: 'full' } */
  readonly backoff?: Partial<BackoffOptions>;
  /** @default { threshold: 5, cooldownMs: 5000, maxCooldownMs: 60000, mode: 'consecutive' } */
  readonly breaker?: Partial<BreakerOptions>;
  /** How long a `rate-limited` endpoint is skipped when the error carries no `retryAfterMs`. @default 1000 */
  readonly rateLimitCooldownMs?: number;
  /** Calls in progress at once (each holds one permit across all its retries). @default unbounded */
  readonly maxConcurrentCalls?: number;
  /** Default for calls that find no endpoint admitting. @default 'fail-fast' */
  readonly breakerMode?: BreakerMode;
  /** @default the system clock */
  readonly clock?: Clock;
  /** @default Math.random */
  readonly random?: RandomSource;
  /** Where counters and durations go. @default none */
  readonly metrics?: MetricsSink;
  /** Receives every event, synchronously. @default none */
  readonly onEvent?: EventListener;
  /**
   * Endpoints counted together upstream (keys of one account), by name: each group shares
   * one quota (same ceiling, pacing and cooldown). Members' `rateLimit`s must agree.
   * @default []
   */
  readonly groups?: readonly (readonly string[])[];
  /** Hour (UTC) at which daily quotas reset. @default 0 */
  readonly dailyResetUtcHour?: number;
  /** Tuning of `strategy: 'health'`. */
  readonly health?: HealthOptions;
  /**
   * Re-acquires an endpoint's credentials after an `unauthorized` answer (single-flight
   * per endpoint); the attempt is then replayed there at once. @default none: `unauthorized` is final
   */
  readonly refreshAuth?: (conn: C, ctx: AttemptContext) => Promise<unknown>;
  /** Timeout of one credential refresh. @default the attempt timeout */
  readonly refreshTimeoutMs?: number;
  /** Quotas counted across processes through a shared store (e.g. `endpoint-pool/redis`). @default none */
  readonly sharedQuota?: StoreOptions;
  /** A pool-wide cap on retries and hedges relative to traffic. @default none (off) */
  readonly retryBudget?: RetryBudgetOptions;
  /**
   * Never eject a whole tier: at most `min(floor(n × maxEjectedPercent / 100), n − 1)` of a
   * tier's `n` endpoints may be out because of their breakers; beyond that the tier is in
   * panic and calls spread over all of its endpoints. @default none (off)
   */
  readonly maxEjectedPercent?: number;
  /** Tuning of latency tracking (`strategy: 'latency'`, hedging on a percentile). */
  readonly latency?: LatencyOptions;
  /** Hedging defaults for calls marked `idempotent` that ask for it. @default none (off) */
  readonly hedge?: HedgeOptions;
}

export interface LatencyOptions {
  /** Time constant of the EWMA's decay towards faster observations. @default 10000 */
  readonly decayMs?: number;
  /** Latency counted for a failed attempt, at least. @default the attempt timeout (10000 if none) */
  readonly failurePenaltyMs?: number;
  /** Latency assumed for an endpoint with no history yet. @default the slowest estimate among endpoints with history */
  readonly coldStartMs?: number;
}

export interface HedgeOptions {
  /** Start a hedge when the first attempt has not answered after this long. @default 100 */
  readonly afterMs?: number;
  /** Or after this quantile (0-1) of the endpoint's recent durations, once it has 20 of them; `afterMs` until then. */
  readonly percentile?: number;
  /** Hedges per call at most. @default 1 */
  readonly maxHedges?: number;
}

export interface HealthOptions {
  /** Window over which failures and usage are ranked. @default 300000 (5 min) */
  readonly windowMs?: number;
  /** Longer window that breaks ties on usage. @default 900000 (15 min) */
  readonly longWindowMs?: number;
  /** Longest a call waits for a healthier endpoint rather than use a less healthy one now. @default 1500 */
  readonly maxWaitForHealthyMs?: number;
}

export interface ExecuteOptions {
  /** Send every attempt to this endpoint and no other; fails with `PIN_UNAVAILABLE` if it cannot serve. */
  readonly pin?: string;
  /** Endpoints this call must not use. */
  readonly exclude?: readonly string[];
  /** Overrides the pool's `deadlineMs` for this call (`Infinity`: no deadline). */
  readonly deadlineMs?: number;
  /** Overrides the pool's `attemptTimeoutMs` for this call. */
  readonly attemptTimeoutMs?: number;
  /** Aborting it rejects the call with `ABORTED` and aborts the running attempt. */
  readonly signal?: AbortSignal;
  /** @default { maxAttempts: pool.maxAttempts } */
  readonly retry?: RetryMode;
  /** @default the pool's `breakerMode` */
  readonly breakerMode?: BreakerMode;
  /** Overrides parts of the pool's backoff for this call. */
  readonly backoff?: Partial<BackoffOptions>;
  /** The operation may safely run more than once at the same time (a read): allows hedging. @default false */
  readonly idempotent?: boolean;
  /** Hedge this call (only if `idempotent`): `true` for the pool's `hedge` options, or options of its own. @default false */
  readonly hedge?: boolean | HedgeOptions;
}

/** Ready-made call options that read well at the call site. */
export const presets = {
  /** Work nobody waits on (polls, refreshes): one attempt, fail fast when nothing admits. */
  background: { retry: 'none', breakerMode: 'fail-fast' },
  /** Work that must get through: retry until cancelled, 250 ms → 10 s, wait for a breaker's probe. */
  essential: {
    retry: 'until-deadline',
    breakerMode: 'wait',
    deadlineMs: Number.POSITIVE_INFINITY,
    backoff: { initialMs: 250, maxMs: 10_000 },
  },
} as const satisfies Record<string, ExecuteOptions>;

export const DEFAULTS = {
  strategy: 'ordered',
  maxAttempts: 3,
  attemptTimeoutMs: 10_000,
  deadlineMs: 30_000,
  backoff: { initialMs: 100, maxMs: 10_000, jitter: 'full' },
  breaker: { threshold: 5, cooldownMs: 5_000, maxCooldownMs: 60_000, mode: 'consecutive', failureRate: 0.5, windowMs: 10_000, minThroughput: 10 },
  rateLimitCooldownMs: 1_000,
  breakerMode: 'fail-fast',
  dailyResetUtcHour: 0,
  health: { windowMs: 300_000, longWindowMs: 900_000, maxWaitForHealthyMs: 1_500 },
  rateLimit: { mode: 'bucket', marginMs: 25, dailyStopFraction: 0.95 },
} as const;

const STRATEGIES: readonly Strategy[] = ['ordered', 'round-robin', 'random', 'health', 'latency'];
const PRIORITIES: readonly Priority[] = ['high', 'low'];
const JITTERS: readonly Jitter[] = ['none', 'full', 'equal', 'decorrelated'];
const BREAKER_MODES: readonly BreakerMode[] = ['fail-fast', 'wait'];

export function oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw invalidOption(field, `one of ${allowed.map((a) => `'${a}'`).join(', ')}`, value);
}

/** A finite number >= min (or > min when `exclusive`). */
export function finite(field: string, value: unknown, fallback: number, min = 0, exclusive = false): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || (exclusive ? value <= min : value < min)) {
    throw invalidOption(field, `a finite number ${exclusive ? '>' : '>='} ${min}`, value);
  }
  return value;
}

/** Like `finite`, but `Infinity` is allowed (meaning "no limit"). */
export function durationOrInfinity(field: string, value: unknown, fallback: number): number {
  if (value === Number.POSITIVE_INFINITY) return value;
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || Number.isNaN(value) || value <= 0) {
    throw invalidOption(field, 'a number of milliseconds > 0, or Infinity', value);
  }
  return value;
}

export function positiveInteger(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw invalidOption(field, 'a positive integer', value);
  }
  return value;
}

/** A positive integer or `Infinity` (meaning "unbounded"). */
export function limitOrInfinity(field: string, value: unknown): number {
  if (value === undefined || value === Number.POSITIVE_INFINITY) return Number.POSITIVE_INFINITY;
  return positiveInteger(field, value, 0);
}

export function plainObject(field: string, value: unknown): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidOption(field, 'an object', value);
  return value as Record<string, unknown>;
}

export function resolveBackoff(field: string, value: unknown, base: BackoffOptions): BackoffOptions {
  const o = plainObject(field, value);
  if (o === undefined) return base;
  const initialMs = finite(`${field}.initialMs`, o['initialMs'], base.initialMs);
  const maxMs = finite(`${field}.maxMs`, o['maxMs'], Math.max(base.maxMs, initialMs));
  if (maxMs < initialMs) throw invalidOption(`${field}.maxMs`, `a number >= initialMs (${initialMs})`, maxMs);
  const jitter = oneOf(`${field}.jitter`, o['jitter'], JITTERS, base.jitter);
  return { initialMs, maxMs, jitter };
}

export function resolveBreaker(value: unknown): BreakerOptions {
  const o = plainObject('breaker', value) ?? {};
  const d = DEFAULTS.breaker;
  const threshold = positiveInteger('breaker.threshold', o['threshold'], d.threshold);
  const cooldownMs = finite('breaker.cooldownMs', o['cooldownMs'], d.cooldownMs, 0, true);
  const maxCooldownMs = finite('breaker.maxCooldownMs', o['maxCooldownMs'], Math.max(d.maxCooldownMs, cooldownMs), 0, true);
  if (maxCooldownMs < cooldownMs) {
    throw invalidOption('breaker.maxCooldownMs', `a number >= cooldownMs (${cooldownMs})`, maxCooldownMs);
  }
  const mode = oneOf('breaker.mode', o['mode'], ['consecutive', 'failure-rate'] as const, d.mode);
  const failureRate = finite('breaker.failureRate', o['failureRate'], d.failureRate, 0, true);
  if (failureRate > 1) throw invalidOption('breaker.failureRate', 'a fraction in (0, 1]', failureRate);
  const windowMs = finite('breaker.windowMs', o['windowMs'], d.windowMs, 0, true);
  const minThroughput = positiveInteger('breaker.minThroughput', o['minThroughput'], d.minThroughput);
  const slowCallMs = durationOrInfinity('breaker.slowCallMs', o['slowCallMs'], Number.POSITIVE_INFINITY);
  const growth = o['ejectionGrowth'];
  if (growth !== undefined && typeof growth !== 'boolean') throw invalidOption('breaker.ejectionGrowth', 'a boolean', growth);
  const jitter = finite('breaker.jitter', o['jitter'], 0);
  if (jitter >= 1) throw invalidOption('breaker.jitter', 'a fraction in [0, 1)', jitter);
  return { threshold, cooldownMs, maxCooldownMs, mode, failureRate, windowMs, minThroughput, slowCallMs, ejectionGrowth: growth === true, jitter };
}

export function resolveRetry(field: string, value: unknown, maxAttempts: number): number {
  if (value === undefined) return maxAttempts;
  if (value === 'none') return 1;
  if (value === 'until-deadline') return Number.POSITIVE_INFINITY;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    return positiveInteger(`${field}.maxAttempts`, (value as Record<string, unknown>)['maxAttempts'], maxAttempts);
  }
  throw invalidOption(field, "'none', 'until-deadline' or { maxAttempts }", value);
}

export function checkFunction(field: string, value: unknown, optional: boolean): void {
  if (value === undefined && optional) return;
  if (typeof value !== 'function') throw invalidOption(field, 'a function', value);
}

export { STRATEGIES, PRIORITIES, BREAKER_MODES };
