/**
 * Every default of the pool in one table. Each concern's
 * resolver (beside the code that uses it) reads its defaults from here, so this file is
 * the one place to look up what an option is when it is not given.
 */
export const DEFAULTS = {
  strategy: 'ordered',
  maxAttempts: 3,
  attemptTimeoutMs: 10_000,
  deadlineMs: 30_000,
  backoff: { initialMs: 100, maxMs: 10_000, jitter: 'full' },
  breaker: { threshold: 5, cooldownMs: 5_000, maxCooldownMs: 60_000, mode: 'consecutive', failureRate: 0.5, windowMs: 10_000, minThroughput: 10 },
  rateLimitCooldownMs: 1_000,
  maxQueueWaitMs: Infinity,
  ceilingRecovery: { quietMs: 30_000, stepMs: 10_000, stepFraction: 0.1 },
  breakerMode: 'fail-fast',
  permitScope: 'call',
  dailyResetUtcHour: 0,
  health: { windowMs: 300_000, longWindowMs: 900_000, maxWaitForHealthyMs: 1_500 },
  rateLimit: { mode: 'bucket', marginMs: 25, dailyStopFraction: 0.95 },
  latency: { decayMs: 10_000 },
  hedge: { afterMs: 100, maxHedges: 1 },
  sharedQuota: { timeoutMs: 50, degradedShare: 0.5, retryAfterMs: 5_000 },
  retryBudget: { ratio: 0.2, minPerSecond: 10, windowMs: 10_000 },
  priority: 'high',
  weight: 1,
} as const;

/**
 * `maxAttempts` left unset: a call may try every endpoint of the pool once, and at least
 * `DEFAULTS.maxAttempts` times (so `max(3, endpoints)`), bounded by the deadline and the
 * retry budget. An explicit `maxAttempts` (pool or call) is the exact cap.
 */
export const AUTO_ATTEMPTS = 0;

/**
 * The bound on work the pool runs on its own (a credential refresh, a health probe): the attempt
 * timeout; without one the deadline; without either the default attempt timeout. Every caller
 * waiting on such work has a bound of its own, but the work itself had none, and one that never
 * settled held what waited on it for good (a refresh, the endpoint's credentials).
 */
export function ownWorkBound(attemptTimeoutMs: number, deadlineMs: number): number {
  return attemptTimeoutMs !== Infinity ? attemptTimeoutMs : deadlineMs !== Infinity ? deadlineMs : DEFAULTS.attemptTimeoutMs;
}

/**
 * The pool's bound on an attempt (its timeout, else the call's deadline), 0 when it sets none:
 * how long a breaker's half-open probe may be out before it is presumed lost. Unlike
 * `ownWorkBound` it has no fallback of its own: a probe is a user's call, which may lift both
 * bounds, and then the open period alone decides (0 adds nothing to it).
 */
export function probeBound(attemptTimeoutMs: number, deadlineMs: number): number {
  const bound = Math.min(attemptTimeoutMs, deadlineMs);
  return bound === Infinity ? 0 : bound;
}
