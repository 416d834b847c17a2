/**
 * `Pool<C>`: a resilient pool of named endpoints.
 *
 * The user supplies the endpoints (each with a connection value the pool never inspects),
 * an operation per call and a `classify` for its failures; the pool supplies selection by
 * priority, per-endpoint circuit breakers, rate limits, retries by error class with
 * backoff, a whole-call deadline and per-attempt timeouts, a concurrency limit, health
 * probing, events and endpoint-labeled metrics. See ARCHITECTURE.md for one call, step by
 * step.
 */
import { Call } from './call.js';
import type { BreakerState } from './breaker.js';
import { systemClock, systemRandom, type Clock } from './clock.js';
import type { Operation } from './context.js';
import { invalidOption } from './errors.js';
import {
  BREAKER_MODES,
  DEFAULTS,
  STRATEGIES,
  checkFunction,
  durationOrInfinity,
  finite,
  limitOrInfinity,
  oneOf,
  plainObject,
  positiveInteger,
  resolveBackoff,
  resolveBreaker,
  type EndpointConfig,
  type ExecuteOptions,
  type PoolOptions,
  type Priority,
} from './options.js';
import { probeEndpoints, type ProbeResult } from './probe.js';
import { PoolState, type ResolvedOptions } from './state.js';

/** A snapshot of one endpoint, from `pool.stats()`. */
export interface EndpointStats {
  readonly name: string;
  readonly priority: Priority;
  readonly breaker: BreakerState;
  /** Consecutive failures the breaker has counted. */
  readonly consecutiveFailures: number;
  readonly inFlight: number;
  readonly peakInFlight: number;
  readonly attempts: number;
  readonly successes: number;
  readonly failures: number;
  /** Failures classified `rate-limited`. */
  readonly rateLimited: number;
  /** How long selection still skips it after a rate-limited answer. */
  readonly cooldownRemainingMs: number;
  /** Its rate limit in calls per second, if it has one. */
  readonly ceilingPerSecond: number | undefined;
}

export interface ProbeOptions {
  /** Timeout of each probe. @default the pool's `attemptTimeoutMs` */
  readonly timeoutMs?: number;
}

export class Pool<C> {
  readonly #s: PoolState<C>;
  #closing: Promise<void> | undefined;

  constructor(options: PoolOptions<C>) {
    const o = plainObject('options', options);
    if (o === undefined) throw invalidOption('options', 'an object', options);
    checkFunction('classify', o['classify'], false);
    checkFunction('onEvent', o['onEvent'], true);
    const clock = o['clock'] ?? systemClock;
    if (typeof clock !== 'object' || clock === null || typeof (clock as typeof systemClock).now !== 'function' || typeof (clock as typeof systemClock).setTimeout !== 'function') {
      throw invalidOption('clock', 'a Clock ({ now, setTimeout, clearTimeout })', clock);
    }
    checkFunction('random', o['random'], true);
    const metrics = o['metrics'];
    if (metrics !== undefined && (typeof metrics !== 'object' || metrics === null || typeof (metrics as { increment?: unknown }).increment !== 'function')) {
      throw invalidOption('metrics', 'a MetricsSink ({ increment, observe? })', metrics);
    }
    const resolved: ResolvedOptions = {
      classify: options.classify,
      strategy: oneOf('strategy', o['strategy'], STRATEGIES, DEFAULTS.strategy),
      maxAttempts: positiveInteger('maxAttempts', o['maxAttempts'], DEFAULTS.maxAttempts),
      attemptTimeoutMs: durationOrInfinity('attemptTimeoutMs', o['attemptTimeoutMs'], DEFAULTS.attemptTimeoutMs),
      deadlineMs: durationOrInfinity('deadlineMs', o['deadlineMs'], DEFAULTS.deadlineMs),
      backoff: resolveBackoff('backoff', o['backoff'], DEFAULTS.backoff),
      breaker: resolveBreaker(o['breaker']),
      rateLimitCooldownMs: finite('rateLimitCooldownMs', o['rateLimitCooldownMs'], DEFAULTS.rateLimitCooldownMs),
      maxConcurrentCalls: limitOrInfinity('maxConcurrentCalls', o['maxConcurrentCalls']),
      breakerMode: oneOf('breakerMode', o['breakerMode'], BREAKER_MODES, DEFAULTS.breakerMode),
    };
    this.#s = new PoolState<C>(resolved, options.clock ?? systemClock, options.random ?? systemRandom, options.metrics, options.onEvent);
    this.#s.setEndpoints(o['endpoints']);
  }

  /**
   * Runs `op` against the pool's endpoints until it succeeds, fails in a way a retry
   * cannot fix, or runs out of attempts or time. Rejects only with a `PoolError`.
   */
  execute<T>(op: Operation<C, T>, options?: ExecuteOptions): Promise<T> {
    let call: Call<C, T>;
    try {
      call = new Call(this.#s, op, options);
    } catch (error) {
      return Promise.reject(error);
    }
    return call.run();
  }

  /**
   * Runs `probe` once against every endpoint whose breaker is not strictly open, all at
   * once, each under a timeout. Results never feed the breakers.
   */
  probeHealth(probe: Operation<C, unknown>, options?: ProbeOptions): Promise<ProbeResult[]> {
    if (typeof probe !== 'function') return Promise.reject(invalidOption('probe', 'a function (conn, ctx) => Promise', probe));
    let timeoutMs = this.#s.opts.attemptTimeoutMs;
    try {
      if (options !== undefined) timeoutMs = durationOrInfinity('timeoutMs', plainObject('options', options)?.['timeoutMs'], timeoutMs);
    } catch (error) {
      return Promise.reject(error);
    }
    return probeEndpoints(this.#s, probe, timeoutMs);
  }

  /** The breaker of one endpoint: `'closed'`, `'half-open'` or `{ state: 'open', untilMs }`. */
  breakerState(name: string): BreakerState {
    return this.#endpoint(name).breaker.state(this.#s.clock.now());
  }

  /** A snapshot of every endpoint, in configuration order. */
  stats(): EndpointStats[] {
    const now = this.#s.clock.now();
    return this.#s.endpoints.map((ep) => ({
      name: ep.name,
      priority: ep.priority,
      breaker: ep.breaker.state(now),
      consecutiveFailures: ep.breaker.failures,
      inFlight: ep.inFlight,
      peakInFlight: ep.peakInFlight,
      attempts: ep.attempts,
      successes: ep.successes,
      failures: ep.failures,
      rateLimited: ep.rateLimited,
      cooldownRemainingMs: Math.max(0, ep.cooldownUntil - now),
      ceilingPerSecond: ep.limiter?.perSecond,
    }));
  }

  /** The clock the pool was built with, so that helpers (a refresher) share its time and timers. */
  get clock(): Clock {
    return this.#s.clock;
  }

  /** Endpoint names, in configuration order. */
  get endpointNames(): string[] {
    return this.#s.endpoints.map((ep) => ep.name);
  }

  /** Calls in progress (started and not yet settled). */
  get activeCalls(): number {
    return this.#s.active;
  }

  /** Calls waiting for a concurrency permit. */
  get pendingCalls(): number {
    return this.#s.permitQueue.length;
  }

  /**
   * Replaces the endpoint set. Endpoints kept by name (same connection value and
   * settings) keep their breaker, limiter and counters; removed ones receive no new
   * attempts; attempts in flight finish normally.
   */
  setEndpoints(endpoints: readonly EndpointConfig<C>[]): void {
    this.#s.setEndpoints(endpoints);
  }

  /**
   * Stops the pool: new calls fail with `CLOSED`, calls that are waiting (for a permit,
   * a backoff, a rate limit) fail with `CLOSED` at once, and attempts already running
   * finish; a call whose running attempt fails is not retried. Resolves when no call is
   * left. Idempotent.
   */
  close(): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    const s = this.#s;
    s.closed = true;
    for (const w of [...s.waiting]) w.closeWaiting();
    this.#closing = s.active === 0 ? Promise.resolve() : new Promise<void>((resolve) => {
      s.onIdle = resolve;
    });
    return this.#closing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #endpoint(name: string) {
    const ep = this.#s.byName.get(name);
    if (ep === undefined) throw invalidOption('name', 'the name of an endpoint of this pool', name);
    return ep;
  }
}
