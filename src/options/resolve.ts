/**
 * The pool's options, checked once in the constructor: each concern's resolver lives
 * beside the code that uses it (breaker, backoff, limits, latency, hedging, the store, the
 * budget); this file only puts them together.
 */
import { resolveBackoff, type BackoffOptions } from '../call/backoff.js';
import { guardRandom, systemClock, systemRandom, type Clock, type RandomSource } from '../base/clock.js';
import { invalidOption } from '../base/errors.js';
import type { EventListener } from '../base/events.js';
import type { MetricsSink } from '../base/metrics.js';
import type { Classifier } from '../base/classify.js';
import { resolveBreaker, type ResolvedBreaker } from '../health/breaker.js';
import type { RetryBudget } from '../limits/budget.js';
import { needFeature, type FeatureOptions, type Features } from '../features.js';
import type { ResolvedStore } from '../limits/store.js';
import type { CeilingRecovery } from '../limits/ceiling.js';
import type { HedgeConfig } from '../selection/hedge.js';
import type { ResolvedLatency } from '../selection/latency.js';
import type { ResolvedHealth } from '../selection/health.js';
import { AUTO_ATTEMPTS, DEFAULTS, probeBound } from './defaults.js';
import { BREAKER_MODES, STRATEGIES, type BreakerMode, type PermitScope, type PoolOptions, type RefreshAuth, type Strategy } from './options.js';
import { checkFunction, checkKeys, durationOrInfinity, finite, oneOf, plainObject, positiveInteger, withMethods, type KnownKeys } from './validate.js';

/**
 * A core option's check: the value given (`undefined` when not) and the option's default
 * (its `DEFAULTS` entry) to the resolved value, or an `INVALID_OPTIONS` error.
 */
type Check = (field: string, value: any, fallback: any, features: Features, resolved: Record<string, unknown>) => unknown;

/**
 * Every pool option, in one table that drives both the key check and the resolution: a core
 * option maps to its check, an optional feature's option to the feature's slot (the feature
 * checks it, see `FeatureOptions`; a pool without it refuses it), and `0` marks an option read
 * elsewhere (`endpoints`, `groups`). The order is the order of the checks, and the order in
 * which unknown keys look for their nearest valid option.
 */
const POOL: Readonly<Record<keyof PoolOptions<unknown>, Check | keyof Features | 0>> = {
  endpoints: 0,
  classify: (f, v) => checkFunction(f, v, false),
  maxQueueWaitMs: durationOrInfinity,
  permitScope: 'concurrency',
  ceilingRecovery: 'limits',
  strategy: (f, v, d, features) => {
    const strategy: Strategy = oneOf(f, v, STRATEGIES, d);
    // Strategies other than the core's two are features' (a slot of the strategy's name).
    if (strategy !== 'ordered' && strategy !== 'round-robin' && features[strategy] === undefined) throw needFeature(f, strategy);
    return strategy;
  },
  maxAttempts: (f, v) => positiveInteger(f, v, AUTO_ATTEMPTS),
  attemptTimeoutMs: durationOrInfinity,
  deadlineMs: durationOrInfinity,
  backoff: resolveBackoff,
  // (After the two bounds: a half-open probe that outlives the pool's bound on an attempt is presumed lost.)
  breaker: (_, v, _d, features, r) => resolveBreaker(v, features.failureRate, probeBound(r['attemptTimeoutMs'] as number, r['deadlineMs'] as number)),
  rateLimitCooldownMs: (f, v, d) => finite(f, v, d),
  maxConcurrentCalls: 'concurrency',
  breakerMode: (f, v, d) => oneOf(f, v, BREAKER_MODES, d),
  clock: (f, v) => (v === undefined ? systemClock : withMethods(f, v, ['now', 'setTimeout', 'clearTimeout'], 'a Clock ({ now, setTimeout, clearTimeout })')),
  random: (f, v) => (v === undefined ? systemRandom : guardRandom(checkFunction(f, v, false) as RandomSource)),
  metrics: (f, v) => (v === undefined ? v : withMethods(f, v, ['increment'], 'a MetricsSink ({ increment, observe? })')),
  onEvent: (f, v) => checkFunction(f, v, true),
  groups: 0,
  dailyResetUtcHour: 'limits',
  health: 'health',
  refreshAuth: 'auth',
  refreshTimeoutMs: 'auth',
  sharedQuota: 'store',
  retryBudget: 'budget',
  maxEjectedPercent: 'panic',
  latency: 'latency',
  hedge: 'hedge',
};

/** Every pool option, for `checkKeys`, which reads only its keys (adapters extend it with their own). */
export const POOL_KEYS = POOL as unknown as Record<keyof PoolOptions<unknown>, true> & KnownKeys;

/** Names users reach for that the pool spells differently. */
export const POOL_ALIASES: Readonly<Record<string, string>> = {
  retries: 'maxAttempts',
  retry: 'maxAttempts',
  attempts: 'maxAttempts',
  maxRetries: 'maxAttempts',
  timeout: 'attemptTimeoutMs',
  timeoutMs: 'attemptTimeoutMs',
  deadline: 'deadlineMs',
  concurrency: 'maxConcurrentCalls',
  rateLimit: "endpoints[i].rateLimit",
  listener: 'onEvent',
  onError: 'onEvent',
  signal: 'a per-call option: pool.execute(op, { signal })',
  operation: 'not an option: each call passes it, pool.execute((conn, ctx) => ...)',
};

/**
 * The pool's options after checking, with every default filled in. An optional feature's
 * options (`ceilingRecovery`, `dailyResetUtcHour`, `refreshTimeoutMs`, ...) are filled in by
 * that feature (`FeatureOptions`) and left out of a pool without it, where nothing reads them.
 */
export interface ResolvedOptions {
  readonly classify: Classifier;
  readonly strategy: Strategy;
  readonly maxAttempts: number;
  readonly attemptTimeoutMs: number;
  readonly deadlineMs: number;
  readonly backoff: BackoffOptions;
  readonly breaker: ResolvedBreaker;
  readonly rateLimitCooldownMs: number;
  readonly maxQueueWaitMs: number;
  readonly ceilingRecovery: CeilingRecovery;
  /** `undefined` (no pool-wide limit) only for a pool without the concurrency feature, as `permitScope`. */
  readonly maxConcurrentCalls: number | undefined;
  readonly breakerMode: BreakerMode;
  readonly permitScope: PermitScope | undefined;
  readonly dailyResetUtcHour: number;
  readonly refreshAuth: RefreshAuth<unknown> | undefined;
  readonly refreshTimeoutMs: number;
  readonly sharedQuota: ResolvedStore | undefined;
  readonly retryBudget: RetryBudget | undefined;
  /** Panic mode threshold; `undefined`: off. */
  readonly maxEjectedPercent: number | undefined;
  /** `undefined` only for a pool without the latency feature. */
  readonly latency: ResolvedLatency | undefined;
  /** The calls' hedge defaults; `undefined` only for a pool without the hedge feature. */
  readonly hedge: HedgeConfig | undefined;
  /** The pool was given `hedge` options (calls may still hedge with options of their own). */
  readonly hedgeConfigured: boolean;
  /** `undefined` only for a pool without the health feature. */
  readonly health: ResolvedHealth | undefined;
}

export interface PoolSetup {
  readonly resolved: ResolvedOptions;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly metrics: MetricsSink | undefined;
  readonly listener: EventListener | undefined;
  /** The raw endpoint configs and groups, checked when the endpoint set is built. */
  readonly endpoints: unknown;
  readonly groups: unknown;
}

export function resolvePoolOptions<C>(options: PoolOptions<C>, features: Features): PoolSetup {
  const o = plainObject('options', options);
  if (o === undefined) throw invalidOption('options', 'an object', options);
  checkKeys('options', o, POOL_KEYS, POOL_ALIASES);
  const r: Record<string, unknown> = {};
  let key: keyof typeof POOL;
  for (key in POOL) {
    const check = POOL[key];
    if (typeof check === 'function') r[key] = check(key, o[key], DEFAULTS[key as keyof typeof DEFAULTS], features, r);
    else if (check !== 0 && o[key] !== undefined && features[check] === undefined) throw needFeature(key, check);
  }
  r.hedgeConfigured = o['hedge'] !== undefined;
  // Then each feature's own options (the slots' order), which may read the core's.
  for (const slot of Object.values(features) as { options?: FeatureOptions }[]) Object.assign(r, slot.options?.(o, features, r as unknown as ResolvedOptions));
  // Copied into a literal: `r`, filled by computed keys, is a dictionary-mode object in V8,
  // and every call reads these options (`s.opts.x`): a hash lookup each (+10-15 % CPU per call;
  // test/options-shape.test.ts).
  const resolved = { ...r } as unknown as ResolvedOptions & Pick<PoolOptions<C>, 'clock' | 'random' | 'metrics' | 'onEvent'>;
  return { resolved, clock: resolved.clock!, random: resolved.random!, metrics: resolved.metrics, listener: resolved.onEvent, endpoints: o['endpoints'], groups: o['groups'] };
}
