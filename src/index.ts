/**
 * endpoint-pool: make calls to a set of remote endpoints resilient.
 *
 * `new Pool({ endpoints, classify })`, then `pool.execute((conn, ctx) => call(conn, ctx.signal))`.
 * The core has no runtime dependency and imports no `node:` module.
 */
export { Pool, type EndpointStats, type ProbeOptions } from './pool.js';
export { Refresher, type RefresherOptions, type RefreshResult, type SharedSurvivors } from './refresher.js';
export { PoolError, isPoolError, type PoolErrorCode } from './errors.js';
export type { AttemptContext, Operation } from './context.js';
export type { ErrorClass, Classification, ClassifyResult, Classifier } from './classify.js';
export type { PoolEvent, PoolEventType, EventListener, CancelReason, FailureClass } from './events.js';
export { METRICS, type MetricsSink, type Labels } from './metrics.js';
export { systemClock, systemRandom, type Clock, type RandomSource, type TimerHandle } from './clock.js';
export type { BreakerState, BreakerOptions } from './breaker.js';
export type { BackoffOptions, Jitter } from './backoff.js';
export type { ProbeResult } from './probe.js';
export {
  presets,
  type PoolOptions,
  type EndpointConfig,
  type ExecuteOptions,
  type RateLimitOptions,
  type RetryMode,
  type BreakerMode,
  type Strategy,
  type Priority,
} from './options.js';
export { applySlice, parseGroups } from './env.js';
export type { EndpointStatus } from './pool.js';
export type { HealthOptions } from './options.js';
export type { LimiterStore, SharedChange, SharedLimit, SharedState, StoreOptions } from './store.js';
