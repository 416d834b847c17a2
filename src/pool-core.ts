/**
 * `PoolCore<C>`: a resilient pool of named endpoints, with the optional features it was
 * built with (`Features`). `Pool` (pool.ts) is this class with every feature.
 *
 * The user supplies the endpoints (each with a connection value the pool never inspects),
 * an operation per call and a `classify` for its failures; the pool supplies selection by
 * priority, per-endpoint circuit breakers, rate limits, retries by error class with
 * backoff, a whole-call deadline and per-attempt timeouts, a concurrency limit, health
 * probing, events and endpoint-labeled metrics. See ARCHITECTURE.md for one call, step by
 * step.
 */
import { Call } from './call/call.js';
import { NumberedCall, TaggedCall } from './call/tagged-call.js';
import type { BreakerSnapshot, BreakerState } from './health/breaker.js';
import type { Clock } from './base/clock.js';
import { isEventType, type EventListener, type PoolEventOf, type PoolEventType, type Unsubscribe } from './base/events.js';
import type { Operation } from './call/context.js';
import { PoolError, invalidOption } from './base/errors.js';
import { rejectionOf, resolvePlan, settlementOf, type CallPlan } from './call/plan.js';
import type { EndpointConfig, ExecuteOptions, PoolOptions, Priority } from './options/options.js';
import { resolvePoolOptions } from './options/resolve.js';
import type { ProbeResult } from './health/probe.js';
import { needFeature, tableOf, type Feature } from './features.js';
import { PoolState } from './state.js';
import type { AdaptiveLimit } from './limits/adaptive.js';

function lower(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

function parkedUntil(until: number, now: number): number | undefined {
  return until > now ? until : undefined;
}

function adaptiveStats(a: AdaptiveLimit | undefined): EndpointStats['adaptive'] {
  return a === undefined ? undefined : { perSecond: a.rate, foundPerSecond: a.anchor, changedAtMs: a.changedAt };
}

function changedAt(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.max(a, b);
}

/** Where an endpoint stands, most severe first. */
export type EndpointStatus = 'disabled' | 'parked' | 'open' | 'cooling' | 'ok';

/** A snapshot of one endpoint, from `pool.stats()`. */
export interface EndpointStats {
  readonly name: string;
  readonly priority: Priority;
  /** `disabled` (invalid key), `parked` (daily quota spent), `open` (breaker), `cooling` (after a 429), or `ok`. */
  readonly status: EndpointStatus;
  /** `{ state: 'closed' }`, `{ state: 'half-open' }` or `{ state: 'open', untilMs }`. */
  readonly breaker: BreakerSnapshot;
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
  /**
   * Its per-second ceiling in force (configured, or learned from the server and possibly
   * recovering), if it has one: in a group, the lower of the group's and its own. A learned
   * ceiling takes the recovery steps due on the endpoint's next success: reading changes nothing.
   */
  readonly ceilingPerSecond: number | undefined;
  /** In a group: its own learned ceiling, when a rate-limited answer described the key alone. */
  readonly ownCeilingPerSecond: number | undefined;
  /** When a learned ceiling of this endpoint (its own or its quota's) last changed; `undefined` if none was learned. */
  readonly ceilingChangedAtMs: number | undefined;
  /**
   * With `rateLimit.adaptive`: the rate the adaptive limit allows now, the rate at which the
   * server last refused (`undefined` before it did), and when the limit last moved.
   */
  readonly adaptive: { readonly perSecond: number; readonly foundPerSecond: number | undefined; readonly changedAtMs: number } | undefined;
  /** Attempts started in the last 5 and 15 minutes. */
  readonly usage5m: number;
  readonly usage15m: number;
  /** Failures (other than `permanent`) in the last 5 minutes. */
  readonly failures5m: number;
  /** Calls counted against its daily quota today, if it has one. */
  readonly dailyCount: number | undefined;
  /** Until when it is parked (daily quota spent), if it is. */
  readonly parkedUntilMs: number | undefined;
}

/** Options of `close()`. */
export interface CloseOptions {
  /**
   * How long attempts already running may go on (ms on the pool's clock): then their calls fail
   * `CLOSED` and their signals abort. `0`: at once. Default `Infinity`: they finish. A second
   * `close()` can only bring the time forward.
   */
  abortAfterMs?: number;
}

export interface ProbeOptions {
  /** Timeout of each probe. @default the pool's `attemptTimeoutMs`; without one its `deadlineMs`; without either 10000 */
  readonly timeoutMs?: number;
}

/** The pool's state, for `executeAs` (set once by Pool's static block). */
let stateOf: <C>(pool: PoolCore<C>) => PoolState<C>;

export class PoolCore<C> {
  readonly #s: PoolState<C>;
  #closing: Promise<void> | undefined;

  static {
    stateOf = (pool) => pool.#s;
  }

  /**
   * `features`: the optional features this pool may use (see features.ts); an option that
   * needs one it lacks is refused with `INVALID_OPTIONS` naming it.
   */
  constructor(options: PoolOptions<C>, features: readonly Feature[]) {
    if (!Array.isArray(features)) throw invalidOption('features', 'an array of features', features);
    const table = tableOf(features);
    const r = resolvePoolOptions(options, table);
    this.#s = new PoolState<C>(r.resolved, r.clock, r.random, r.metrics, r.listener, table);
    this.#s.setEndpoints(r.endpoints, r.groups);
  }

  /**
   * Runs `op` against the pool's endpoints until it succeeds, fails in a way a retry
   * cannot fix, or runs out of attempts or time. Rejects only with a `PoolError`.
   */
  execute<T>(op: Operation<C, T>, options?: ExecuteOptions): Promise<T> {
    let call: Call<C, T>;
    try {
      call = this.#s.listener === undefined ? new Call(this.#s, op, options) : new NumberedCall(this.#s, op, options);
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
    if (this.#s.closed) return Promise.reject(new PoolError('CLOSED', 'the pool is closed'));
    const probing = this.#s.features.probe;
    if (probing === undefined) return Promise.reject(needFeature('probeHealth', 'probe'));
    return probing.run(this.#s, probe, options);
  }

  /**
   * Subscribes to events: of one type (the listener gets that event, narrowed), or all of
   * them with `'*'` or no type. Listeners run synchronously, in subscription order, after
   * the constructor's `onEvent`; one that throws is isolated. Returns the unsubscribe
   * function, also a `Disposable` (`using sub = pool.on(...)`) where `Symbol.dispose` exists.
   */
  on<T extends PoolEventType>(type: T, listener: (event: PoolEventOf<T>) => void): Unsubscribe;
  on(type: '*', listener: EventListener): Unsubscribe;
  on(listener: EventListener): Unsubscribe;
  on(a: PoolEventType | '*' | EventListener, b?: (event: never) => void): Unsubscribe {
    const [type, listener] = typeof a === 'function' ? (['*', a] as const) : ([a, b as unknown] as const);
    if (typeof listener !== 'function') throw invalidOption('listener', 'a function (event) => void', listener);
    if (!isEventType(type)) throw invalidOption('type', "an event type or '*'", type);
    return this.#s.listeners.add(type, listener as EventListener);
  }

  /**
   * The breaker of one endpoint: `'closed'`, `'half-open'` or `{ state: 'open', untilMs }`
   * (a union kept for compatibility; `stats()[i].breaker` has one shape for every state).
   */
  breakerState(name: string): BreakerState {
    return this.#endpoint(name).breaker.state(this.#s.clock.now());
  }

  /** A snapshot of every endpoint, in configuration order. */
  stats(): EndpointStats[] {
    const now = this.#s.clock.now();
    return this.#s.endpoints.map((ep) => ({
      name: ep.name,
      priority: ep.priority,
      status: ep.disabled
        ? 'disabled'
        : ep.quota.blockedMs(now) > 0 || (ep.own?.blockedMs(now) ?? 0) > 0
          ? 'parked'
          : ep.breaker.isStrictlyOpen(now)
            ? 'open'
            : ep.quota.cooldownUntil > now
              ? 'cooling'
              : 'ok',
      breaker: ep.breaker.snapshot(now),
      consecutiveFailures: ep.breaker.failures,
      inFlight: ep.inFlight,
      peakInFlight: ep.peakInFlight,
      attempts: ep.attempts,
      successes: ep.successes,
      failures: ep.failures,
      rateLimited: ep.rateLimited,
      cooldownRemainingMs: Math.max(0, ep.quota.cooldownUntil - now),
      ceilingPerSecond: lower(ep.quota.perSecond, ep.own?.perSecond),
      ownCeilingPerSecond: ep.own?.perSecond,
      ceilingChangedAtMs: changedAt(ep.quota.learned?.changedAt, ep.own?.learned?.changedAt),
      adaptive: adaptiveStats(ep.quota.adaptive),
      usage5m: ep.usage.sum(now, 300_000),
      usage15m: ep.usage.sum(now, 900_000),
      failures5m: ep.recentFailures.sum(now, 300_000),
      dailyCount: ep.quota.daily?.count(now),
      parkedUntilMs: parkedUntil(Math.max(ep.quota.parkedUntil, ep.own?.parkedUntil ?? 0), now),
    }));
  }

  /**
   * Theoretical calls per second of the endpoints that can take calls now (not disabled,
   * parked or behind an open breaker). A group sharing one quota counts once.
   * `Infinity` when such an endpoint has no per-second limit. Learned ceilings and adaptive
   * limits count at the value in force (a read applies no recovery step); a group counts at
   * the lower of its shared ceiling and the sum of its members' own.
   */
  capacity(): number {
    const s = this.#s;
    const now = s.clock.now();
    // Without the limits feature no endpoint has a per-second limit (limits/capacity.ts adds them up).
    if (s.features.limits !== undefined) return s.features.limits.capacity(s, now);
    return s.endpoints.some((ep) => ep.unavailableMs(now) === 0) ? Infinity : 0;
  }

  /**
   * Adds `value` (default 1) to your own endpoint-labeled counter `name` (rows parsed,
   * writes acknowledged), through the same metrics sink and event stream as the pool's.
   * A counter only goes up, and `endpoint_pool_*` names are the pool's own.
   */
  report(endpoint: string, name: string, value = 1): void {
    const ep = this.#endpoint(endpoint);
    if (typeof name !== 'string' || name.length === 0 || name.startsWith('endpoint_pool_')) throw invalidOption('name', "a metric name not starting 'endpoint_pool_'", name);
    if (typeof value !== 'number' || !(value >= 0 && value < Infinity)) throw invalidOption('value', 'a finite number ≥ 0', value);
    this.#s.count(name, ep.labels, value);
    this.#s.emit({ type: 'report', endpoint: ep.name, name, value });
  }

  /** Brings back an endpoint disabled by a `disableEndpoint` hint. */
  enableEndpoint(name: string): void {
    const ep = this.#endpoint(name);
    if (!ep.disabled) return;
    ep.disabled = false;
    this.#s.emit({ type: 'endpoint-enabled', endpoint: ep.name });
    this.#s.wakeParked();
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

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#s.closed;
  }

  /** Calls waiting for a concurrency permit. */
  get pendingCalls(): number {
    return this.#s.permitQueue?.length ?? 0;
  }

  /**
   * Replaces the endpoint set. Endpoints kept by name (same connection value) keep their
   * breaker, limiter and counters, settings changed in place; removed ones receive no new
   * attempts; attempts in flight finish normally.
   */
  setEndpoints(endpoints: readonly EndpointConfig<C>[], groups?: readonly (readonly string[])[]): void {
    this.#s.setEndpoints(endpoints, groups ?? this.#s.groups);
  }

  /**
   * Stops the pool: new calls fail with `CLOSED`, calls that are waiting (for a permit,
   * a backoff, a rate limit) fail with `CLOSED` at once, and attempts already running
   * finish (or, past `abortAfterMs`, are abandoned); a call whose running attempt fails is
   * not retried. Resolves when no call is left. Idempotent.
   */
  close(options?: CloseOptions): Promise<void> {
    const after = options?.abortAfterMs === undefined ? Infinity : options.abortAfterMs;
    if (!(typeof after === 'number' && after >= 0)) return Promise.reject(invalidOption('abortAfterMs', 'a number of milliseconds >= 0, or Infinity', after));
    const s = this.#s;
    if (this.#closing === undefined) {
      s.closed = true; // #closing is set before the waits end: a listener's close() meanwhile gets it
      this.#closing = new Promise<void>((resolve) => (s.onIdle = () => (s.stopAborting(), resolve()))).then(() => {
        s.timeouts.stop();
        s.fleet?.stopListening();
      });
      for (const w of [...s.waiting]) w.closeWaiting();
      for (const cut of [...s.probes]) cut(new PoolError('CLOSED', 'the pool was closed while probing'));
      if (s.active === 0) s.onIdle!();
    }
    if (after !== Infinity) s.abortAfter(after);
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

/** @internal For the read layer (quorum reads), which bounds a read by the pool's default deadline as a whole. */
export function defaultDeadlineMs<C>(pool: PoolCore<C>): number {
  return stateOf(pool).opts.deadlineMs;
}

/**
 * @internal For extras with timers of their own (the Refresher, the RPC head poll): calls `stop`
 * as `close()` is called (at once on a closed pool), so that nothing of theirs outlives the pool.
 * Returns what takes it back (a stopped extra holds no place in the pool).
 */
export function onPoolClose<C>(pool: PoolCore<C>, stop: () => void): () => void {
  const s = stateOf(pool);
  if (s.closed) stop();
  else s.probes.add(stop);
  return () => void s.probes.delete(stop);
}

/** @internal The pool's state, for the RPC layer's view of the endpoint set (rpc/connections.ts). */
export function poolStateOf<C>(pool: PoolCore<C>): PoolState<C> {
  return stateOf(pool);
}

/** Plans on the pool's defaults that map rejections, one per pool and mapping. */
const mappedPlans = new WeakMap<object, WeakMap<object, CallPlan<unknown>>>();

/**
 * @internal For the adapters: `pool.execute(op)` with no options, whose promise rejects with
 * `rejectAs(poolError)` instead of the `PoolError` (events and metrics still get the
 * `PoolError`). The same as `pool.execute(op).then(undefined, (e) => { throw rejectAs(e) })`
 * without the extra promise a request in flight would hold. `tag` (optional) rides on the
 * call: the operation reads it as its attempt's `tag`, and a classifier marked
 * `TAKES_ATTEMPT` gets it with the failed attempt, so a request needs no closure of its own.
 */
export function executeAs<C, T>(pool: PoolCore<C>, op: Operation<C, T>, rejectAs: (error: PoolError) => unknown, tag?: unknown): Promise<T> {
  const s = stateOf(pool);
  let plans = mappedPlans.get(s);
  if (plans === undefined) mappedPlans.set(s, (plans = new WeakMap()));
  let plan = plans.get(rejectAs) as CallPlan<C> | undefined;
  if (plan === undefined) plans.set(rejectAs, (plan = { ...s.defaultPlan, rejectAs }) as CallPlan<unknown>);
  return runAs(s, plan, op, tag);
}

/** @internal `executeAs` bound to one pool and mapping: no look-up per request (the viem adapter's hot path). */
export function executorAs<C>(pool: PoolCore<C>, rejectAs: (error: PoolError) => unknown, options?: ExecuteOptions): <T>(op: Operation<C, T>, tag?: unknown) => Promise<T> {
  const s = stateOf(pool);
  const plan = { ...(options === undefined ? s.defaultPlan : resolvePlan(s, options)), rejectAs } as CallPlan<C>;
  return (op, tag) => runAs(s, plan, op, tag);
}

/**
 * @internal For the fetch adapter: `pool.execute(op, options)` with `tag` riding on the
 * call (the operation reads it as its attempt's `tag`), whose failure settles as
 * `settleAs(poolError, tag)` gives (a value resolves the call's promise). One closure-free
 * call per request where `execute(op).catch(...)` would hold a closure and a promise more.
 */
export function taggedExecutor<C>(pool: PoolCore<C>, settleAs: (error: PoolError, tag: unknown) => unknown): <T>(op: Operation<C, T>, tag: unknown, options?: ExecuteOptions) => Promise<T> {
  const s = stateOf(pool);
  const plain = { ...s.defaultPlan, settleAs } as CallPlan<C>;
  return <T>(op: Operation<C, T>, tag: unknown, options?: ExecuteOptions): Promise<T> => {
    let call: Call<C, T>;
    try {
      call = new TaggedCall(s, op, options === undefined ? plain : resolvePlan(s, options, settleAs), tag);
    } catch (error) {
      return Promise.resolve(settlementOf(plain, error as PoolError, tag) as T);
    }
    return call.run();
  };
}

function runAs<C, T>(s: PoolState<C>, plan: CallPlan<C>, op: Operation<C, T>, tag: unknown): Promise<T> {
  let call: Call<C, T>;
  try {
    call = tag !== undefined ? new TaggedCall(s, op, plan, tag) : s.listener === undefined ? new Call(s, op, undefined, plan) : new NumberedCall(s, op, undefined, plan);
  } catch (error) {
    return Promise.reject(rejectionOf(plan, error as PoolError));
  }
  return call.run();
}
