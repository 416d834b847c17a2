/**
 * endpoint-pool: make calls to a set of remote endpoints resilient.
 *
 * `new Pool({ endpoints, classify })`, then `pool.execute((conn, ctx) => call(conn, ctx.signal))`.
 * The core has no runtime dependency and imports no `node:` module.
 */
export { Pool, PoolCore, type EndpointStats, type CloseOptions, type ProbeOptions } from './pool.js';
export { healthProbes, retryBudgets, rateLimits, hedging, latencySelection, healthSelection, randomSelection, panicMode, failureRates, authRefresh, sharedQuotas, reusableSignals, concurrencyLimits, callRouting } from './features-all.js';
export type { Feature } from './features.js';
export { Refresher, type RefresherOptions, type RefreshResult, type SharedSurvivors } from './extras/refresher.js';
export { keepConnections, samePlainData } from './extras/same-connection.js';
export { PoolError, isPoolError, type PoolErrorCode } from './base/errors.js';
export type { AttemptContext, Operation } from './call/context.js';
export type { ErrorClass, Classification, ClassifyResult, Classifier, CeilingScope } from './base/classify.js';
export type { PoolEvent, PoolEventType, PoolEventOf, EventListener, Unsubscribe, CancelReason, FailureClass } from './base/events.js';
export { METRICS, type MetricsSink, type Labels } from './base/metrics.js';
export { systemClock, systemRandom, type Clock, type RandomSource, type TimerHandle } from './base/clock.js';
export type { BreakerState, BreakerSnapshot, BreakerOptions } from './health/breaker.js';
export type { BackoffOptions, Jitter } from './call/backoff.js';
export type { ProbeResult } from './health/probe.js';
export { DEFAULTS } from './options/defaults.js';
export { presets } from './options/presets.js';
export type { RetryBudgetOptions } from './limits/budget.js';
export type {
  PoolOptions,
  EndpointConfig,
  ExecuteOptions,
  RateLimitOptions,
  AdaptiveRateOptions,
  RetryMode,
  BreakerMode,
  PermitScope,
  Strategy,
  Priority,
  RefreshAuth,
  LatencyOptions,
  HedgeOptions,
} from './options/options.js';
export { applySlice, parseGroups } from './extras/env.js';
export type { EndpointStatus } from './pool.js';
export type { HealthOptions, CeilingRecoveryOptions } from './options/options.js';
export type { LimiterStore, SharedChange, SharedLimit, SharedState, StoreOptions } from './limits/store.js';
