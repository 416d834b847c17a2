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
import { needFeature, type Features } from '../features.js';
import type { ResolvedStore } from '../limits/store.js';
import type { CeilingRecovery } from '../limits/ceiling.js';
import type { HedgeConfig } from '../selection/hedge.js';
import type { ResolvedLatency } from '../selection/latency.js';
import type { ResolvedHealth } from '../selection/health.js';
import { AUTO_ATTEMPTS, DEFAULTS } from './defaults.js';
import { BREAKER_MODES, STRATEGIES, PERMIT_SCOPES, type BreakerMode, type PermitScope, type PoolOptions, type RefreshAuth, type Strategy } from './options.js';
import { checkFunction, checkKeys, durationOrInfinity, finite, limitOrInfinity, oneOf, optionsObject, plainObject, positiveInteger, type KnownKeys } from './validate.js';

/** Every pool option, for `checkKeys` (adapters extend it with their own). */
export const POOL_KEYS: Record<keyof PoolOptions<unknown>, true> & KnownKeys = {
  endpoints: true,
  classify: true,
  maxQueueWaitMs: true,
  permitScope: true,
  ceilingRecovery: true,
  strategy: true,
  maxAttempts: true,
  attemptTimeoutMs: true,
  deadlineMs: true,
  backoff: true,
  breaker: true,
  rateLimitCooldownMs: true,
  maxConcurrentCalls: true,
  breakerMode: true,
  clock: true,
  random: true,
  metrics: true,
  onEvent: true,
  groups: true,
  dailyResetUtcHour: true,
  health: true,
  refreshAuth: true,
  refreshTimeoutMs: true,
  sharedQuota: true,
  retryBudget: true,
  maxEjectedPercent: true,
  latency: true,
  hedge: true,
};

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
};

/** The pool's options after checking, with every default filled in. */
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
  readonly maxConcurrentCalls: number;
  readonly breakerMode: BreakerMode;
  readonly permitScope: PermitScope;
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
  checkFunction('classify', o['classify'], false);
  checkFunction('onEvent', o['onEvent'], true);
  const clock = o['clock'] === undefined ? systemClock : o['clock'];
  if (typeof clock !== 'object' || clock === null || typeof (clock as typeof systemClock).now !== 'function' || typeof (clock as typeof systemClock).setTimeout !== 'function' || typeof (clock as typeof systemClock).clearTimeout !== 'function') {
    throw invalidOption('clock', 'a Clock ({ now, setTimeout, clearTimeout })', clock);
  }
  checkFunction('random', o['random'], true);
  checkFunction('refreshAuth', o['refreshAuth'], true);
  const metrics = o['metrics'];
  if (metrics !== undefined && (typeof metrics !== 'object' || metrics === null || typeof (metrics as { increment?: unknown }).increment !== 'function')) {
    throw invalidOption('metrics', 'a MetricsSink ({ increment, observe? })', metrics);
  }
  const strategy = oneOf('strategy', o['strategy'], STRATEGIES, DEFAULTS.strategy);
  // Strategies other than the core's two are features' (a slot of the strategy's name).
  if (strategy !== 'ordered' && strategy !== 'round-robin' && features[strategy] === undefined) throw needFeature('strategy', strategy);
  const resolved: ResolvedOptions = {
    classify: options.classify,
    strategy,
    maxAttempts: o['maxAttempts'] === undefined ? AUTO_ATTEMPTS : positiveInteger('maxAttempts', o['maxAttempts'], DEFAULTS.maxAttempts),
    attemptTimeoutMs: durationOrInfinity('attemptTimeoutMs', o['attemptTimeoutMs'], DEFAULTS.attemptTimeoutMs),
    deadlineMs: durationOrInfinity('deadlineMs', o['deadlineMs'], DEFAULTS.deadlineMs),
    backoff: resolveBackoff('backoff', o['backoff'], DEFAULTS.backoff),
    breaker: resolveBreaker(o['breaker'], features.failureRate),
    rateLimitCooldownMs: finite('rateLimitCooldownMs', o['rateLimitCooldownMs'], DEFAULTS.rateLimitCooldownMs),
    maxQueueWaitMs: o['maxQueueWaitMs'] === undefined ? DEFAULTS.maxQueueWaitMs : durationOrInfinity('maxQueueWaitMs', o['maxQueueWaitMs'], DEFAULTS.maxQueueWaitMs),
    ceilingRecovery: o['ceilingRecovery'] === undefined ? DEFAULTS.ceilingRecovery : limitsFor(features, 'ceilingRecovery').ceilingRecovery(o['ceilingRecovery']),
    maxConcurrentCalls: limitOrInfinity('maxConcurrentCalls', o['maxConcurrentCalls']),
    breakerMode: oneOf('breakerMode', o['breakerMode'], BREAKER_MODES, DEFAULTS.breakerMode),
    permitScope: oneOf('permitScope', o['permitScope'], PERMIT_SCOPES, DEFAULTS.permitScope),
    dailyResetUtcHour: o['dailyResetUtcHour'] === undefined ? DEFAULTS.dailyResetUtcHour : limitsFor(features, 'dailyResetUtcHour').resetHour(o['dailyResetUtcHour']),
    refreshAuth: given(o, 'refreshAuth', 'auth', features.auth) as ResolvedOptions['refreshAuth'],
    sharedQuota: sharedQuota(o, features),
    retryBudget: optional(o, 'retryBudget', 'budget', features.budget),
    maxEjectedPercent: optional(o, 'maxEjectedPercent', 'panic', features.panic),
    latency: features.latency === undefined ? optional(o, 'latency', 'latency', undefined) : features.latency.resolve(o['latency'], o['attemptTimeoutMs']),
    hedge: features.hedge === undefined ? optional(o, 'hedge', 'hedge', undefined) : features.hedge.resolve('hedge', o['hedge'], undefined, features),
    hedgeConfigured: o['hedge'] !== undefined,
    refreshTimeoutMs: durationOrInfinity('refreshTimeoutMs', given(o, 'refreshTimeoutMs', 'auth', features.auth), durationOrInfinity('attemptTimeoutMs', o['attemptTimeoutMs'], DEFAULTS.attemptTimeoutMs)),
    health: features.health === undefined ? optional(o, 'health', 'health', undefined) : features.health.resolve(o['health']),
  };
  return { resolved, clock: options.clock ?? systemClock, random: options.random === undefined ? systemRandom : guardRandom(options.random), metrics: options.metrics, listener: options.onEvent, endpoints: o['endpoints'], groups: o['groups'] };
}

/** An optional feature's options, checked by the feature's own resolver; `undefined` when not given. */
function optional<T>(o: Record<string, unknown>, key: string, name: keyof Features, feature: { readonly resolve: (value: unknown) => T | undefined } | undefined): T | undefined {
  const value = given(o, key, name, feature);
  return value === undefined ? undefined : feature!.resolve(value);
}

/** The option `key` as given, refused when the pool lacks the feature `name` that uses it. */
function given(o: Record<string, unknown>, key: string, name: keyof Features, feature: object | undefined): unknown {
  const value = o[key];
  if (value !== undefined && feature === undefined) throw needFeature(key, name);
  return value;
}

/** The rate-limit feature, for `option`: a pool built without it refuses the option. */
function limitsFor(features: Features, option: string): NonNullable<Features['limits']> {
  if (features.limits === undefined) throw needFeature(option, 'limits');
  return features.limits;
}

/** `sharedQuota`: the store feature checks it; the store counts endpoints' rate limits, so it needs the limits feature too. */
function sharedQuota(o: Record<string, unknown>, features: Features): ResolvedStore | undefined {
  const store = optional(o, 'sharedQuota', 'store', features.store);
  if (store !== undefined) limitsFor(features, 'sharedQuota');
  return store;
}
