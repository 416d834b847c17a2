/**
 * The optional features' code, reached by the core only through this table.
 *
 * A bundler follows static imports, not the run-time checks that guard a feature, so a
 * feature the core imported directly would ship in every bundle whatever the options. The
 * core instead asks `PoolState.features` for it: `Pool` (pool.ts) is built with every
 * feature (features-all.ts); a pool built with fewer (`PoolCore` with a list of them)
 * bundles without the others' code, and an option that needs a missing feature fails in
 * the constructor with `INVALID_OPTIONS` naming it.
 *
 * Each slot holds what the core calls: a resolver that checks the feature's options, and
 * the functions or classes the call path uses. The types are imported as types only; this
 * is the one file whose type-only imports may close a loop (test/house/architecture.test.ts
 * leaves them out of its cycle check), since it names every feature's types for the core.
 */
import { PoolError } from './base/errors.js';
import type { PoolState } from './state.js';
import type { Operation, SignalSource } from './call/context.js';
import type { ProbeResult } from './health/probe.js';
import type { Clock } from './base/clock.js';
import type { Verdict } from './base/classify.js';
import type { EndpointState } from './selection/endpoint.js';
import type { Quota, ResolvedRateLimit } from './limits/quota.js';
import type { WaitQueue } from './limits/waiters.js';
import type { groupEndpoints } from './limits/groups.js';
import type { capacity } from './limits/capacity.js';
import type { Hedging } from './call/hedging.js';
import type { PermitQueue } from './call/permit-queue.js';
import type { avoidedBy, excludedOf, pinnedOf, pinnedOut, selectAvoiding, selectPinned } from './call/routing.js';
import type { HedgeConfig } from './selection/hedge.js';
import type { LatencyTracker } from './selection/latency.js';
import type { Selector } from './selection/selector.js';
import type { PanicHost, PanicMode } from './selection/panic.js';
import type { BreakerOptions } from './health/breaker.js';
import type { FailureRateOptions } from './health/failure-rate.js';
import type { reauthenticate } from './call/auth.js';
import type { admissionTimedOut, askStore } from './call/admission.js';
import type { Fleet } from './limits/fleet.js';
import type { ResolvedOptions } from './options/resolve.js';

/**
 * A feature's pool options: checks the options it owns (listed in resolve.ts's table) in the
 * raw options object and returns their resolved values. It runs after the core's own checks,
 * so `resolved` holds those (`attemptTimeoutMs`, ...).
 */
export type FeatureOptions = (o: Readonly<Record<string, unknown>>, features: Features, resolved: ResolvedOptions) => Partial<ResolvedOptions>;

export interface Features {
  /** `pool.probeHealth`. */
  readonly probe?: { readonly run: <C>(s: PoolState<C>, probe: Operation<C, unknown>, options: unknown) => Promise<ProbeResult[]> };
  /** The pool's `retryBudget`. */
  readonly budget?: { readonly options: FeatureOptions };
  /**
   * The rate-limit family: endpoints' `rateLimit` (token bucket, paced, daily, adaptive),
   * `groups`, learned ceilings and their recovery, and the per-quota wait queues. With it,
   * every endpoint gets a full `Quota` (limits/quota.ts); without it, a `BasicQuota`
   * (limits/basic-quota.ts): the plain cooldown after a rate-limited answer only.
   *
   * A pool without it, on a classifier's hints: `ceilingPerSecond` (and `ceilingScope`) is
   * ignored, so the answer cools the endpoint down as one without a number does
   * (Retry-After, else `rateLimitCooldownMs` doubled per such answer in a row), with no
   * `endpoint-recalibrated`; `dailyQuotaExhausted` cannot park the endpoint until a daily
   * reset (there is no calendar code): it cools it down for `rateLimitCooldownMs` (or the
   * longer cooldown the answer set), the call moves on, and no `endpoint-parked` is emitted.
   * A call waiting for a cooling endpoint sleeps rather than queueing for a turn.
   * `endpoints[i].rateLimit`, `groups`, `dailyResetUtcHour` and `ceilingRecovery` are refused.
   */
  readonly limits?: {
    /** Checks an endpoint's `rateLimit`. */
    readonly resolve: (field: string, value: unknown) => ResolvedRateLimit | undefined;
    /** Checks `dailyResetUtcHour` and `ceilingRecovery`. */
    readonly options: FeatureOptions;
    /** An endpoint's (or a group's) quota. */
    readonly quota: (limit: ResolvedRateLimit | undefined, resetUtcHour: number, now: number, key: string, wall?: () => number) => Quota;
    /** The pool's `groups` and the quotas of a replaced endpoint set (limits/groups.ts). */
    readonly group: typeof groupEndpoints;
    /** A wait queue for a quota's turns (waiters.ts). */
    readonly waitQueue: (clock: Clock) => WaitQueue;
    /** call/ceilings.ts. */
    readonly learnCeiling: <C>(s: PoolState<C>, ep: EndpointState<C>, verdict: Verdict, now: number, sentAt?: number) => Quota;
    readonly ownLevel: <C>(s: PoolState<C>, ep: EndpointState<C>, now: number) => Quota;
    readonly recoverCeilings: <C>(s: PoolState<C>, ep: EndpointState<C>, now: number) => void;
    /** limits/capacity.ts: `pool.capacity()`. */
    readonly capacity: typeof capacity;
    /** call/adaptive.ts. */
    readonly adaptDown: <C>(s: PoolState<C>, ep: EndpointState<C>, q: Quota, sentAt: number, now: number) => void;
    readonly adaptUp: <C>(s: PoolState<C>, ep: EndpointState<C>, now: number) => void;
  };
  /** Hedging: the pool's `hedge` and a call's (a percentile also needs `latency`). */
  readonly hedge?: { readonly options: FeatureOptions; readonly resolve: (field: string, value: unknown, base: HedgeConfig | undefined, features: Features) => HedgeConfig; readonly Hedging: typeof Hedging };
  /** Latency tracking: `strategy: 'latency'`, the pool's `latency`, and the durations a percentile hedge reads. */
  readonly latency?: { readonly options: FeatureOptions; readonly Tracker: typeof LatencyTracker; readonly selector: StrategyOf };
  /**
   * `strategy: 'health'` and the pool's `health` options (selection/health.ts). Without it
   * both are refused; the endpoints still count their recent attempts and failures
   * (`stats()`'s `usage5m`, `failures5m`), which the core keeps for everyone.
   */
  readonly health?: { readonly options: FeatureOptions; readonly selector: StrategyOf };
  /** `strategy: 'random'` (selection/random.ts). Without it the strategy is refused. */
  readonly random?: { readonly selector: StrategyOf };
  /**
   * Panic mode (`maxEjectedPercent`, selection/panic.ts): a tier with too many endpoints
   * ejected by their breakers ignores them. Without it the option is refused, and the
   * breakers eject every endpoint that fails, as with the option unset.
   */
  readonly panic?: { readonly options: FeatureOptions; readonly mode: <C>(s: PanicHost<C>, maxEjectedPercent: number) => PanicOf<C> };
  /**
   * The breaker's `failure-rate` mode (health/failure-rate.ts): the checks of its options,
   * which in that mode bring each breaker's window (`ResolvedBreaker.failureWindow`). Without it `breaker.mode: 'failure-rate'`, `failureRate`,
   * `windowMs` and `minThroughput` are refused; breakers count consecutive failures.
   */
  readonly failureRate?: { readonly resolve: (o: Readonly<Record<string, unknown>>, mode: BreakerOptions['mode']) => FailureRateOptions };
  /**
   * Credential refresh (`refreshAuth`, `refreshTimeoutMs`): what an `unauthorized` answer runs.
   * Without it such an answer ends the call with `UNAUTHORIZED`, as with no `refreshAuth`.
   */
  readonly auth?: { readonly options: FeatureOptions; readonly reauthenticate: typeof reauthenticate };
  /**
   * A pool-wide limit on calls (`maxConcurrentCalls`, `permitScope`): the queue of calls
   * waiting for a permit. Without it calls are not limited pool-wide (`pendingCalls` stays 0);
   * endpoints' own `maxInFlight` still applies.
   */
  readonly concurrency?: { readonly options: FeatureOptions; readonly Queue: typeof PermitQueue };
  /** A call's `pin`, `exclude` and `avoid` (call/routing.ts). Without it all are refused; the call path's own exclusions still work. */
  readonly routing?: { readonly excluded: typeof excludedOf; readonly pinned: typeof pinnedOf; readonly select: typeof selectPinned; readonly out: typeof pinnedOut; readonly avoiding: typeof selectAvoiding; readonly avoided: typeof avoidedBy };
  /** The shared store (`sharedQuota`): its options, the pool's side of it (`PoolState.fleet`) and admission. */
  readonly store?: {
    readonly options: FeatureOptions;
    readonly connect: <C>(s: PoolState<C>) => Fleet<C>;
    readonly askStore: typeof askStore;
    readonly admissionTimedOut: typeof admissionTimedOut;
  };
  /**
   * Reusable attempt signals (base/signals.ts): a controller whose attempt ended normally,
   * with nothing left listening to it, serves a later attempt that reads `ctx.signal`.
   * Without it every attempt that reads `ctx.signal` gets a new `AbortController`, which
   * behaves the same and costs a few microseconds more on Node (nothing to refuse).
   */
  readonly signals?: SignalSource;
}

/** A strategy's selector for one pool (`strategy: 'latency'`, `'health'`, `'random'`: a slot of that name), made when the pool is built. */
export type StrategyOf = <C>(s: PoolState<C>) => Selector<C>;

/** One pool's panic mode (selection/panic.ts), named here so that state.ts needs no import of it. */
export type PanicOf<C> = PanicMode<C>;

/** The pool's side of the shared store (limits/fleet.ts), named here so that state.ts needs no import of it. */
export type FleetOf<C> = Fleet<C>;

/**
 * One or more optional features, as handed to `PoolCore`: an opaque value (its contents are
 * the core's business). `new PoolCore(options, [hedging, retryBudgets])`.
 */
export interface Feature {
  readonly [featureBrand]: true;
}
declare const featureBrand: unique symbol;

/** A feature value from part of the table. */
export function feature(slots: Features): Feature {
  return slots as unknown as Feature;
}

/** The table of a list of features (later ones win on a shared slot). */
export function tableOf(features: readonly Feature[]): Features {
  if (features.length === 1) return features[0] as unknown as Features;
  return Object.assign({}, ...(features as unknown as Features[])) as Features;
}

/** The exported value (features-all.ts) that brings each slot. */
const FEATURE_VALUES: Record<keyof Features, string> = {
  probe: 'healthProbes',
  budget: 'retryBudgets',
  limits: 'rateLimits',
  hedge: 'hedging',
  latency: 'latencySelection',
  health: 'healthSelection',
  random: 'randomSelection',
  panic: 'panicMode',
  failureRate: 'failureRates',
  auth: 'authRefresh',
  store: 'sharedQuotas',
  signals: 'reusableSignals',
  concurrency: 'concurrencyLimits',
  routing: 'callRouting',
};

/** The error for an option (or method) whose feature the pool was built without. */
export function needFeature(option: string, feature: keyof Features): PoolError {
  return new PoolError('INVALID_OPTIONS', `${option} needs the ${feature} feature, which this pool was built without (add ${FEATURE_VALUES[feature]} to its features, or use Pool, which has them all)`, { field: option });
}
