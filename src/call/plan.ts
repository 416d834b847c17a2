/**
 * A call's plan: the pool's defaults with `execute()`'s options laid over them, checked
 * once when the call is made. A call with no options shares the pool's default plan, so
 * the common path allocates nothing here.
 */
import { invalidOption, type PoolError } from '../base/errors.js';
import type { HedgeConfig } from '../selection/hedge.js';
import { needFeature, type Features } from '../features.js';
import type { EndpointState } from '../selection/endpoint.js';
import { resolveBackoff, type BackoffOptions } from './backoff.js';
import { BREAKER_MODES, type BreakerMode, type ExecuteOptions } from '../options/options.js';
import { checkKeys, durationOrInfinity, oneOf, positiveInteger, type KnownKeys } from '../options/validate.js';

const EXECUTE_KEYS: Record<keyof ExecuteOptions, true> & KnownKeys = {
  pin: true,
  exclude: true,
  avoid: true,
  deadlineMs: true,
  attemptTimeoutMs: true,
  signal: true,
  retry: true,
  breakerMode: true,
  backoff: true,
  idempotent: true,
  hedge: true,
};

const EXECUTE_ALIASES: Readonly<Record<string, string>> = {
  retries: 'retry',
  maxAttempts: 'retry',
  timeout: 'attemptTimeoutMs',
  timeoutMs: 'attemptTimeoutMs',
  deadline: 'deadlineMs',
  endpoint: 'pin',
};
import type { ResolvedOptions } from '../options/resolve.js';

/** What a plan is checked against: the pool's options and its endpoints by name (the pool's state). */
export interface PlanContext<C> {
  readonly opts: ResolvedOptions;
  readonly byName: ReadonlyMap<string, EndpointState<C>>;
  readonly features: Features;
}

/**
 * Every plan has every field (`undefined` where unused): one V8 shape for all of them, and an
 * adapter's copy with one field replaced (`{ ...plan, rejectAs }`) stays on V8's fast path,
 * where a spread followed by a field it did not copy costs about 1 µs on Node 20.
 */
export interface CallPlan<C> {
  /** The pool's state, whose plan this is: a call reaches its pool through its plan (one field fewer per call in flight). */
  readonly state: PlanContext<C>;
  readonly deadlineMs: number;
  readonly attemptTimeoutMs: number;
  readonly maxAttempts: number;
  readonly breakerMode: BreakerMode;
  readonly backoff: BackoffOptions;
  readonly pin: EndpointState<C> | undefined;
  /** Endpoints named in `exclude` (a fresh array per call: the call adds to it). */
  readonly excluded: EndpointState<C>[] | undefined;
  /** `avoid`, asked at each selection (call/routing.ts). */
  readonly avoid: ((endpoint: string) => boolean) | undefined;
  readonly signal: AbortSignal | undefined;
  /** Set when the call hedges. */
  readonly hedge: HedgeConfig | undefined;
  /** What the call's promise rejects with instead of its `PoolError` (adapters only; see `executeAs`). */
  readonly rejectAs: ((error: PoolError) => unknown) | undefined;
  /**
   * What a failed call settles with instead (adapters only; see `taggedExecutor`): given
   * the `PoolError` and the call's tag, a value to resolve with or a promise to settle as.
   */
  readonly settleAs: SettleAs | undefined;
}

/** What a failed call settles with instead of a rejection (see `CallPlan`). */
export type SettleAs = (error: PoolError, tag: unknown) => unknown;

/**
 * What a failed call's promise is resolved with: a rejection with its `PoolError` (or what
 * `rejectAs` maps it to), or whatever `settleAs` gives (a mapping that throws: a rejection
 * with what it threw).
 */
export function settlementOf<C>(plan: CallPlan<C>, error: PoolError, tag: unknown): unknown {
  const settle = plan.settleAs;
  if (settle === undefined) return new Rejection(rejectionOf(plan, error));
  try {
    return settle(error, tag);
  } catch (thrown) {
    return new Rejection(thrown);
  }
}

/**
 * A thenable that rejects with `reason`: a promise resolved with it rejects, with no rejected
 * promise in between. A `Promise.reject(reason)` would be one, rejected before the call's
 * promise adopts it and so, for an instant, with no handler: runtimes track each such promise
 * until a handler comes, Deno in a list it searches (closing a pool with 50,000 queued calls
 * took 6.5 s on Deno 2.9, 23 ms on Node), Node in a map.
 */
class Rejection {
  readonly reason: unknown;
  constructor(reason: unknown) {
    this.reason = reason;
  }
  then(_resolve: unknown, reject: (reason: unknown) => void): void {
    reject(this.reason);
  }
}

/** What a failed call rejects with: its `PoolError`, or what the plan maps it to (a mapping that throws gives what it threw). */
export function rejectionOf<C>(plan: CallPlan<C>, error: PoolError): unknown {
  const map = plan.rejectAs;
  if (map === undefined) return error;
  try {
    return map(error);
  } catch (thrown) {
    return thrown;
  }
}

/** The plan of a call made with no options. */
export function defaultPlan<C>(s: PlanContext<C>): CallPlan<C> {
  const o = s.opts;
  return {
    state: s,
    deadlineMs: o.deadlineMs,
    attemptTimeoutMs: o.attemptTimeoutMs,
    maxAttempts: o.maxAttempts,
    breakerMode: o.breakerMode,
    backoff: o.backoff,
    pin: undefined,
    excluded: undefined,
    avoid: undefined,
    signal: undefined,
    hedge: undefined,
    rejectAs: undefined,
    settleAs: undefined,
  };
}

/** Checks `execute()`'s options; throws `INVALID_OPTIONS` (or `PIN_UNAVAILABLE`) on a mistake. */
export function resolvePlan<C>(s: PlanContext<C>, options: ExecuteOptions, settleAs?: SettleAs): CallPlan<C> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw invalidOption('options', 'an object', options);
  checkKeys('options', options as Record<string, unknown>, EXECUTE_KEYS, EXECUTE_ALIASES);
  const o = s.opts;
  const deadlineMs = durationOrInfinity('deadlineMs', options.deadlineMs, o.deadlineMs);
  const attemptTimeoutMs = durationOrInfinity('attemptTimeoutMs', options.attemptTimeoutMs, o.attemptTimeoutMs);
  const maxAttempts = resolveRetry('retry', options.retry, o.maxAttempts);
  const breakerMode = oneOf('breakerMode', options.breakerMode, BREAKER_MODES, o.breakerMode);
  const backoff = options.backoff === undefined ? o.backoff : resolveBackoff('backoff', options.backoff, o.backoff);
  const signal = options.signal;
  if (signal !== undefined) {
    if (typeof signal !== 'object' || signal === null || typeof signal.addEventListener !== 'function' || typeof signal.removeEventListener !== 'function' || typeof signal.aborted !== 'boolean') {
      throw invalidOption('signal', 'an AbortSignal', signal);
    }
  }
  const excluded = options.exclude === undefined ? undefined : routing(s, 'exclude').excluded(s.byName, options.exclude);
  const avoid = options.avoid;
  if (avoid !== undefined) {
    routing(s, 'avoid');
    if (typeof avoid !== 'function') throw invalidOption('avoid', 'a function (endpoint name) => boolean', avoid);
  }
  if (options.idempotent !== undefined && typeof options.idempotent !== 'boolean') throw invalidOption('idempotent', 'a boolean', options.idempotent);
  let hedge: HedgeConfig | undefined;
  if (options.hedge !== undefined && options.hedge !== false) {
    const hedging = s.features.hedge;
    if (hedging === undefined) throw needFeature('hedge', 'hedge');
    // A call that is not idempotent is never hedged: running it twice at once could do harm.
    if (options.idempotent !== true) throw invalidOption('hedge', 'a call marked idempotent: true', options.hedge);
    hedge = options.hedge === true ? o.hedge : hedging.resolve('hedge', options.hedge, o.hedge, s.features);
  } else if (options.hedge === undefined && options.idempotent === true && o.hedgeConfigured) {
    hedge = o.hedge;
  }
  const pin = options.pin === undefined ? undefined : routing(s, 'pin').pinned(s.byName, options.pin);
  return {
    state: s,
    deadlineMs,
    attemptTimeoutMs,
    maxAttempts,
    breakerMode,
    backoff,
    pin,
    excluded,
    avoid,
    signal,
    hedge,
    rejectAs: undefined,
    settleAs,
  };
}

/** The call-routing feature, for `option` (`pin`, `exclude`): a pool built without it refuses the option. */
function routing<C>(s: PlanContext<C>, option: string): NonNullable<Features['routing']> {
  if (s.features.routing === undefined) throw needFeature(option, 'routing');
  return s.features.routing;
}

const RETRY_KEYS: KnownKeys = { maxAttempts: true };

/** `retry`: 'none' (1 attempt), 'until-deadline' (unbounded) or `{ maxAttempts }`. */
export function resolveRetry(field: string, value: unknown, maxAttempts: number): number {
  if (value === undefined) return maxAttempts;
  if (value === 'none') return 1;
  if (value === 'until-deadline') return Infinity;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    checkKeys(field, value as Record<string, unknown>, RETRY_KEYS);
    const n = (value as Record<string, unknown>)['maxAttempts'];
    // `{}` is no shorthand for the pool's default: the object's one member is required.
    if (n === undefined) throw invalidOption(`${field}.maxAttempts`, 'a positive integer', n);
    return positiveInteger(`${field}.maxAttempts`, n, maxAttempts);
  }
  throw invalidOption(field, "'none', 'until-deadline' or { maxAttempts }", value);
}
