/**
 * The pool's public option types. Defaults are in `defaults.ts`; each concern's options
 * are checked by a resolver beside the code that uses them, and `resolve.ts` puts the
 * pool's together once, in the constructor (per call for `execute`'s options, in
 * `call/plan.ts`). A mistake is a `PoolError` with code `INVALID_OPTIONS` whose message
 * names the field, what was expected and what was given.
 */
import type { BackoffOptions } from '../call/backoff.js';
import type { BreakerOptions } from '../health/breaker.js';
import type { Classifier } from '../base/classify.js';
import type { AttemptContext } from '../call/context.js';
import type { Clock, RandomSource } from '../base/clock.js';
import type { EventListener } from '../base/events.js';
import type { StoreOptions } from '../limits/store.js';
import type { RetryBudgetOptions } from '../limits/budget.js';
import type { MetricsSink } from '../base/metrics.js';

export type Priority = 'high' | 'low';

/** Re-acquires an endpoint's credentials (a token, a session) after an `unauthorized` answer. */
export type RefreshAuth<C> = (conn: C, ctx: AttemptContext) => Promise<unknown>;

/**
 * How an endpoint is chosen within a priority tier: `ordered` (first healthy in config
 * order), `round-robin` (weighted rotation), `random` (a random start per call: spreads
 * the load of many stateless callers that each make few calls), `health` (fewest recent
 * failures, then least used), `latency` (power of two choices over peak-EWMA latency × load).
 * A `PoolCore` needs the feature of the last three (`randomSelection`, `healthSelection`,
 * `latencySelection`); `Pool` has them all.
 */
export type Strategy = 'ordered' | 'round-robin' | 'random' | 'health' | 'latency';

export interface RateLimitOptions {
  /** Calls per second, at most 1,000,000. Optional when only `perDay` is set. */
  readonly perSecond?: number;
  /** `bucket`: a token bucket (bursts allowed); `paced`: calls spaced by `(1000 / perSecond) × (1 + marginMs / 1000)`, at most `floor(perSecond)` in any `1000 + marginMs` ms. @default 'bucket' */
  readonly mode?: 'bucket' | 'paced';
  /** Bucket size (bucket mode). @default perSecond (rounded up) */
  readonly burst?: number;
  /** Milliseconds each second of pacing is stretched by, to absorb network jitter (set it to the spread of your one-way latency). @default 25 */
  readonly marginMs?: number;
  /** Calls per day; admission stops at `dailyStopFraction` of it until the next reset. */
  readonly perDay?: number;
  /** Share of `perDay` at which admission stops. @default 0.95 */
  readonly dailyStopFraction?: number;
  /**
   * Tune the per-second limit from rate-limited answers that carry no number (a bare 429):
   * down when the server refuses, back up while it accepts, within [`min`, `max`]. `true`:
   * the defaults. `perSecond`, if given, is the start rate (and the default `max`).
   * Best with `mode: 'paced'`. See docs/adaptive.md. @default off
   */
  readonly adaptive?: true | AdaptiveRateOptions;
  /**
   * The name this endpoint's quota has in a shared limiter store (`sharedQuota`): the fleet
   * counts and learns (today's count, a spent day, a learned ceiling, a disabled key) under
   * `endpoint:<sharedName>`. Give a key's fingerprint or version (never the key itself: store
   * keys are not secret) so that a key rotated under the same endpoint name starts afresh in
   * the fleet instead of inheriting its predecessor's spent day. Not for a member of a group
   * (a group is counted under its own key). @default the endpoint's name
   */
  readonly sharedName?: string;
}

/** `rateLimit.adaptive`: a per-second limit that tunes itself (see limits/adaptive.ts). */
export interface AdaptiveRateOptions {
  /** The floor, in calls per second. @default 1 % of max */
  readonly min?: number;
  /** The ceiling, in calls per second. @default rateLimit.perSecond (one of the two is required) */
  readonly max?: number;
  /** Factor a rate-limited answer multiplies the rate by when too few successes were seen to measure what the server accepts. @default 0.8 */
  readonly decrease?: number;
  /** The server's counting window: at most one decrease per window. @default 1000 */
  readonly windowMs?: number;
  /** Time at the rate last found before probing above it; doubles each time a probe fails at the same rate. @default 5000 */
  readonly holdMs?: number;
  /** The longest hold. @default 15000 */
  readonly maxHoldMs?: number;
  /** A probe reaches twice the rate last found after this long. @default 8000 */
  readonly doublingMs?: number;
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

/**
 * How long a call holds its `maxConcurrentCalls` permit: `'call'`, from its start to its
 * end, across backoffs and waits (the number of calls in progress is bounded, and a call
 * that has started never queues again behind newer ones); `'attempt'`, only while an
 * attempt is being sent (the number of requests in flight is bounded, and a call sleeping
 * in a backoff holds nothing; each attempt queues for a permit, first come first served).
 */
export type PermitScope = 'call' | 'attempt';

/** What a call does when no endpoint admits it: fail at once, or wait for a breaker to let a probe through. */
export type BreakerMode = 'fail-fast' | 'wait';

export interface PoolOptions<C> {
  readonly endpoints: readonly EndpointConfig<C>[];
  /** Maps an operation's error to an error class (see `ErrorClass`). */
  readonly classify: Classifier;
  /** @default 'ordered' */
  readonly strategy?: Strategy;
  /**
   * Attempts per call, the first included (the default retry mode); an explicit value is
   * the exact cap. @default max(3, the number of endpoints): every endpoint may be tried once
   */
  readonly maxAttempts?: number;
  /** Timeout of one attempt. @default 10000 */
  readonly attemptTimeoutMs?: number;
  /** Whole-call deadline, waits included. @default 30000 */
  readonly deadlineMs?: number;
  /** Retry delays. @default { initialMs: 100, maxMs: 10000, jitter: 'full' } */
  readonly backoff?: Partial<BackoffOptions>;
  /** @default { threshold: 5, cooldownMs: 5000, maxCooldownMs: 60000, mode: 'consecutive' } */
  readonly breaker?: Partial<BreakerOptions>;
  /**
   * How long a `rate-limited` endpoint is skipped when the error carries no `retryAfterMs`;
   * doubled for each further such answer in a row, up to `backoff.maxMs`, until a success. @default 1000
   */
  readonly rateLimitCooldownMs?: number;
  /**
   * Longest a call queues for a rate-limit token: a call whose turn (behind the calls
   * queued ahead, counting the time it has already queued since its last attempt) would
   * come later, or after its deadline, fails at once with `RATE_LIMITED`; calls queued on a
   * ceiling that falls are checked again, and a call still queued when the bound is spent
   * (its turn came later than estimated) fails then, unless a turn is free at once. Under
   * overload this sheds the excess fast and keeps the served calls' wait bounded.
   * @default Infinity (only the deadline bounds it)
   */
  readonly maxQueueWaitMs?: number;
  /** How learned ceilings come back up after the server stops rejecting. */
  readonly ceilingRecovery?: CeilingRecoveryOptions;
  /** Calls in progress at once (each holds one permit across all its retries; see `permitScope`). @default unbounded */
  readonly maxConcurrentCalls?: number;
  /** How long a call holds its permit: its whole life (`'call'`) or only while an attempt is sent (`'attempt'`). @default 'call' */
  readonly permitScope?: PermitScope;
  /** Default for calls that find no endpoint admitting. @default 'fail-fast' */
  readonly breakerMode?: BreakerMode;
  /** @default the system clock */
  readonly clock?: Clock;
  /** Jitter and random selection; each draw is guarded (a throw or an answer outside [0, 1) counts as 0.5). @default Math.random */
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
  readonly refreshAuth?: RefreshAuth<C>;
  /** Timeout of one credential refresh. @default the attempt timeout; without one, the deadline; without either, 10000 */
  readonly refreshTimeoutMs?: number;
  /** Quotas counted across processes through a shared store (e.g. `endpoint-pool/redis`). @default none */
  readonly sharedQuota?: StoreOptions;
  /** A pool-wide cap on retries and hedges relative to traffic. @default none (off) */
  readonly retryBudget?: RetryBudgetOptions;
  /**
   * Never eject a whole tier: at most `min(floor(n × maxEjectedPercent / 100), n − 1)` of a
   * tier's `n` endpoints may be out because of their breakers; beyond that the tier is in
   * panic and calls spread over all of its endpoints (a `PoolCore` needs `panicMode`).
   * @default none (off)
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

export interface CeilingRecoveryOptions {
  /**
   * Time with no rate-limited answer before a lowered learned ceiling starts to rise: a
   * quarter of it while callers are turned away for want of a turn, doubled (up to 8×) for
   * each recovery in a row that a 429 took back. @default 30000
   */
  readonly quietMs?: number;
  /** Time between two upward steps (half of it while callers are turned away). @default 10000 */
  readonly stepMs?: number;
  /** The first step adds this fraction of the target (the configured rate, else the highest announced); each next one twice the one before. @default 0.1 */
  readonly stepFraction?: number;
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
  /**
   * Endpoints this call uses only when no other can serve it now: asked with each endpoint's
   * name at every selection (each attempt), `true` to avoid it. The pool chooses among the
   * others first; when that finds no endpoint ready now and untried, it chooses among all, so
   * an avoided endpoint serves before any retry on the others. Hedges never go to one; `pin`
   * ignores it; a throw fails the call with `INVALID_OPTIONS`.
   */
  readonly avoid?: (endpoint: string) => boolean;
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

export const STRATEGIES: readonly Strategy[] = ['ordered', 'round-robin', 'random', 'health', 'latency'];
export const PRIORITIES: readonly Priority[] = ['high', 'low'];
export const BREAKER_MODES: readonly BreakerMode[] = ['fail-fast', 'wait'];
export const PERMIT_SCOPES: readonly PermitScope[] = ['call', 'attempt'];

