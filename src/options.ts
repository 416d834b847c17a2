/**
 * The pool's options, their defaults, and their validation.
 *
 * Everything is checked once, in the constructor (and per call for `execute`'s options),
 * and a mistake is reported as a `PoolError` with code `INVALID_OPTIONS` whose message
 * names the field, what was expected and what was given.
 */
import type { BackoffOptions, Jitter } from './backoff.js';
import type { BreakerOptions } from './breaker.js';
import type { Classifier } from './classify.js';
import type { Clock, RandomSource } from './clock.js';
import { invalidOption } from './errors.js';
import type { EventListener } from './events.js';
import type { MetricsSink } from './metrics.js';

export type Priority = 'high' | 'low';

/**
 * How an endpoint is chosen within a priority tier: always the first (`ordered`), in turn
 * (`round-robin`), or from a random start per call (`random`, which spreads the load of
 * many stateless callers that each make few calls).
 */
export type Strategy = 'ordered' | 'round-robin' | 'random';

export interface RateLimitOptions {
  /** Calls per second, refilled continuously. */
  readonly perSecond: number;
  /** Bucket size. @default perSecond (rounded up) */
  readonly burst?: number;
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

/** What a call does when no endpoint admits it: fail at once, or wait for a breaker to let a probe through. */
export type BreakerMode = 'fail-fast' | 'wait';

export interface PoolOptions<C> {
  readonly endpoints: readonly EndpointConfig<C>[];
  /** Maps an operation's error to an error class (see `ErrorClass`). */
  readonly classify: Classifier;
  /** @default 'ordered' */
  readonly strategy?: Strategy;
  /** Attempts per call, the first included (the default retry mode). @default 3 */
  readonly maxAttempts?: number;
  /** Timeout of one attempt. @default 10000 */
  readonly attemptTimeoutMs?: number;
  /** Whole-call deadline, waits included. @default 30000 */
  readonly deadlineMs?: number;
  /** Retry delays. @default { initialMs: 100, maxMs: 10000, jitter: 'full' } */
  readonly backoff?: Partial<BackoffOptions>;
  /** @default { threshold: 5, cooldownMs: 5000, maxCooldownMs: 60000 } */
  readonly breaker?: Partial<BreakerOptions>;
  /** How long a `rate-limited` endpoint is skipped when the error carries no `retryAfterMs`. @default 1000 */
  readonly rateLimitCooldownMs?: number;
  /** Calls in progress at once (each holds one permit across all its retries). @default unbounded */
  readonly maxConcurrentCalls?: number;
  /** Default for calls that find no endpoint admitting. @default 'fail-fast' */
  readonly breakerMode?: BreakerMode;
  /** @default the system clock */
  readonly clock?: Clock;
  /** @default Math.random */
  readonly random?: RandomSource;
  /** Where counters and durations go. @default none */
  readonly metrics?: MetricsSink;
  /** Receives every event, synchronously. @default none */
  readonly onEvent?: EventListener;
}

export interface ExecuteOptions {
  /** Send every attempt to this endpoint and no other; fails with `PIN_UNAVAILABLE` if it cannot serve. */
  readonly pin?: string;
  /** Endpoints this call must not use. */
  readonly exclude?: readonly string[];
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
}

/** Ready-made call options that read well at the call site. */
export const presets = {
  /** Work nobody waits on (polls, refreshes): one attempt, fail fast when nothing admits. */
  background: { retry: 'none', breakerMode: 'fail-fast' },
  /** Work that must get through: retry until cancelled, 250 ms → 10 s, wait for a breaker's probe. */
  essential: {
    retry: 'until-deadline',
    breakerMode: 'wait',
    deadlineMs: Number.POSITIVE_INFINITY,
    backoff: { initialMs: 250, maxMs: 10_000 },
  },
} as const satisfies Record<string, ExecuteOptions>;

export const DEFAULTS = {
  strategy: 'ordered',
  maxAttempts: 3,
  attemptTimeoutMs: 10_000,
  deadlineMs: 30_000,
  backoff: { initialMs: 100, maxMs: 10_000, jitter: 'full' },
  breaker: { threshold: 5, cooldownMs: 5_000, maxCooldownMs: 60_000 },
  rateLimitCooldownMs: 1_000,
  breakerMode: 'fail-fast',
} as const;

const STRATEGIES: readonly Strategy[] = ['ordered', 'round-robin', 'random'];
const PRIORITIES: readonly Priority[] = ['high', 'low'];
const JITTERS: readonly Jitter[] = ['none', 'full', 'equal', 'decorrelated'];
const BREAKER_MODES: readonly BreakerMode[] = ['fail-fast', 'wait'];

export function oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw invalidOption(field, `one of ${allowed.map((a) => `'${a}'`).join(', ')}`, value);
}

/** A finite number >= min (or > min when `exclusive`). */
export function finite(field: string, value: unknown, fallback: number, min = 0, exclusive = false): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || (exclusive ? value <= min : value < min)) {
    throw invalidOption(field, `a finite number ${exclusive ? '>' : '>='} ${min}`, value);
  }
  return value;
}

/** Like `finite`, but `Infinity` is allowed (meaning "no limit"). */
export function durationOrInfinity(field: string, value: unknown, fallback: number): number {
  if (value === Number.POSITIVE_INFINITY) return value;
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || Number.isNaN(value) || value <= 0) {
    throw invalidOption(field, 'a number of milliseconds > 0, or Infinity', value);
  }
  return value;
}

export function positiveInteger(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw invalidOption(field, 'a positive integer', value);
  }
  return value;
}

/** A positive integer or `Infinity` (meaning "unbounded"). */
export function limitOrInfinity(field: string, value: unknown): number {
  if (value === undefined || value === Number.POSITIVE_INFINITY) return Number.POSITIVE_INFINITY;
  return positiveInteger(field, value, 0);
}

export function plainObject(field: string, value: unknown): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidOption(field, 'an object', value);
  return value as Record<string, unknown>;
}

export function resolveBackoff(field: string, value: unknown, base: BackoffOptions): BackoffOptions {
  const o = plainObject(field, value);
  if (o === undefined) return base;
  const initialMs = finite(`${field}.initialMs`, o['initialMs'], base.initialMs);
  const maxMs = finite(`${field}.maxMs`, o['maxMs'], Math.max(base.maxMs, initialMs));
  if (maxMs < initialMs) throw invalidOption(`${field}.maxMs`, `a number >= initialMs (${initialMs})`, maxMs);
  const jitter = oneOf(`${field}.jitter`, o['jitter'], JITTERS, base.jitter);
  return { initialMs, maxMs, jitter };
}

export function resolveBreaker(value: unknown): BreakerOptions {
  const o = plainObject('breaker', value) ?? {};
  const d = DEFAULTS.breaker;
  const threshold = positiveInteger('breaker.threshold', o['threshold'], d.threshold);
  const cooldownMs = finite('breaker.cooldownMs', o['cooldownMs'], d.cooldownMs, 0, true);
  const maxCooldownMs = finite('breaker.maxCooldownMs', o['maxCooldownMs'], Math.max(d.maxCooldownMs, cooldownMs), 0, true);
  if (maxCooldownMs < cooldownMs) {
    throw invalidOption('breaker.maxCooldownMs', `a number >= cooldownMs (${cooldownMs})`, maxCooldownMs);
  }
  return { threshold, cooldownMs, maxCooldownMs };
}

export function resolveRetry(field: string, value: unknown, maxAttempts: number): number {
  if (value === undefined) return maxAttempts;
  if (value === 'none') return 1;
  if (value === 'until-deadline') return Number.POSITIVE_INFINITY;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    return positiveInteger(`${field}.maxAttempts`, (value as Record<string, unknown>)['maxAttempts'], maxAttempts);
  }
  throw invalidOption(field, "'none', 'until-deadline' or { maxAttempts }", value);
}

export function checkFunction(field: string, value: unknown, optional: boolean): void {
  if (value === undefined && optional) return;
  if (typeof value !== 'function') throw invalidOption(field, 'a function', value);
}

export { STRATEGIES, PRIORITIES, BREAKER_MODES };
