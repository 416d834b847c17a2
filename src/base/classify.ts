/**
 * Error classes: how the pool reacts to an operation's failure.
 *
 * The user's `classify(err)` maps whatever the operation threw to one of these, or to a
 * {@link Classification} with a hint. The pool never looks at the error itself.
 *
 * | class            | breaker                | retry                                              |
 * |------------------|------------------------|----------------------------------------------------|
 * | `transient`      | failure                | yes: at once on an untried endpoint, else backoff  |
 * | `rate-limited`   | untouched              | yes, same schedule; the endpoint cools down        |
 * | `permanent`      | reachable              | no: the call fails with `PERMANENT`                |
 * | `retry-narrower` | reachable              | no: the call fails with `RETRY_NARROWER`           |
 * | `unsupported`    | reachable              | yes, at once, on another endpoint; never this one  |
 * | `unauthorized`   | reachable              | with `refreshAuth`: refresh (at most twice per attempt), replay here at once; else `UNAUTHORIZED` |
 *
 * A `classify` that throws or returns something unknown is treated as `permanent`: the
 * pool does not guess that an error it cannot read is safe to repeat. Hints that are not
 * finite, non-negative numbers are dropped.
 *
 * Hints about the endpoint's quota (`ceilingPerSecond`, `dailyQuotaExhausted`) and
 * `disableEndpoint` act on the endpoint whatever the class; after `dailyQuotaExhausted` or
 * `disableEndpoint` the call moves on at once to another endpoint.
 */

import { describe } from './errors.js';

export type ErrorClass = 'transient' | 'permanent' | 'rate-limited' | 'retry-narrower' | 'unsupported' | 'unauthorized';

/** A class with hints from the server. */
export interface Classification {
  readonly class: ErrorClass;
  /** How long the server asked us to wait (`Retry-After`), in milliseconds. */
  readonly retryAfterMs?: number;
  /** The server's real per-second ceiling (e.g. parsed from "rate limit reached (3/sec)"): the endpoint is recalibrated to it. */
  readonly ceilingPerSecond?: number;
  /**
   * Which limit `ceilingPerSecond` describes, for an endpoint in a group: `key` (this
   * endpoint's own: paces it alone, never its siblings) or `group` (the quota its group
   * shares). @default decided by comparing the number with the levels in force (see docs/quotas.md)
   */
  readonly ceilingScope?: CeilingScope;
  /** The server says the endpoint's daily quota is spent: it is parked until the next daily reset. */
  readonly dailyQuotaExhausted?: boolean;
  /** The endpoint can never succeed (an invalid key): it is disabled until `enableEndpoint`. */
  readonly disableEndpoint?: boolean;
}

export type ClassifyResult = ErrorClass | Classification;

/** The level of a group's limits a learned ceiling applies to. */
export type CeilingScope = 'key' | 'group';

export type Classifier = (error: unknown) => ClassifyResult;

const CLASSES: ReadonlySet<string> = new Set<ErrorClass>(['transient', 'permanent', 'rate-limited', 'retry-narrower', 'unsupported', 'unauthorized']);

/** True for one of the five class names. */
export function isErrorClass(value: unknown): value is ErrorClass {
  return typeof value === 'string' && CLASSES.has(value);
}

/** The normalised outcome of classifying one failure. */
export interface Verdict {
  class: ErrorClass;
  retryAfterMs: number | undefined;
  ceilingPerSecond: number | undefined;
  ceilingScope: CeilingScope | undefined;
  dailyQuotaExhausted: boolean;
  disableEndpoint: boolean;
  /**
   * False when the classifier threw or answered something unknown (the class is then
   * `permanent`), or marked its answer `UNSENT`: the failure then says nothing of the endpoint.
   */
  valid: boolean;
  /** When not `valid`: what was wrong with the classifier's answer, for the call's error message. */
  problem?: string | undefined;
}

/**
 * @internal Marks an adapter's own classifier that also takes the failed attempt (a
 * user's classifier is always called with the error alone).
 */
export const TAKES_ATTEMPT: unique symbol = Symbol('endpoint-pool.takesAttempt');

/**
 * @internal Marks an adapter's classification of an attempt it refused before sending anything
 * (an endpoint another quorum leg holds, or one head routing now leaves out): nothing reached
 * the node, so its breaker and latency learn nothing (a half-open probe stays to be made).
 */
export const UNSENT: unique symbol = Symbol('endpoint-pool.unsent');

/** @internal What a classifier marked `TAKES_ATTEMPT` learns about the failed attempt. */
export interface FailedAttempt {
  readonly endpoint: string;
  /** What the adapter attached to the call (`executeAs`), if anything. */
  readonly tag?: unknown;
}

/**
 * Runs the user's classifier defensively: a throw or an unknown answer becomes
 * `permanent`; a negative or non-finite hint is dropped.
 */
export function runClassifier(classify: Classifier, error: unknown, out: Verdict, attempt?: FailedAttempt): Verdict {
  out.retryAfterMs = undefined;
  out.ceilingPerSecond = undefined;
  out.ceilingScope = undefined;
  out.dailyQuotaExhausted = false;
  out.disableEndpoint = false;
  out.valid = true;
  out.problem = undefined;
  let result: unknown;
  try {
    result = attempt !== undefined && (classify as { [TAKES_ATTEMPT]?: true })[TAKES_ATTEMPT] === true ? (classify as (e: unknown, a: FailedAttempt) => ClassifyResult)(error, attempt) : classify(error);
  } catch (thrown) {
    out.class = 'permanent';
    out.valid = false;
    out.problem = `classify threw ${whatThrew(thrown)}`;
    return out;
  }
  if (isErrorClass(result)) {
    out.class = result;
    return out;
  }
  try {
    return readAnswer(result, out);
  } catch {
    // A getter of the answer threw (a retry hint read from headers that are not there), or a Proxy's trap did.
    Object.assign(out, { class: 'permanent', valid: false, retryAfterMs: undefined, ceilingPerSecond: undefined, ceilingScope: undefined, dailyQuotaExhausted: false, disableEndpoint: false });
    out.problem = 'classify answered an object that threw when read';
    return out;
  }
}

/** What a classifier threw, for a message: reading it runs user code too (a getter, a Proxy's trap). */
function whatThrew(thrown: unknown): string {
  try {
    return thrown instanceof Error ? `a ${thrown.name}` : describe(thrown);
  } catch {
    return 'a value that threw when read';
  }
}

function readAnswer(result: unknown, out: Verdict): Verdict {
  if (typeof result === 'object' && result !== null && isErrorClass((result as Classification).class)) {
    const c = result as Classification;
    out.class = c.class;
    out.retryAfterMs = nonNegative(c.retryAfterMs);
    const ceiling = nonNegative(c.ceilingPerSecond);
    out.ceilingPerSecond = ceiling !== undefined && ceiling > 0 ? ceiling : undefined;
    out.ceilingScope = c.ceilingScope === 'key' || c.ceilingScope === 'group' ? c.ceilingScope : undefined;
    out.dailyQuotaExhausted = c.dailyQuotaExhausted === true;
    out.disableEndpoint = c.disableEndpoint === true;
    if ((c as { [UNSENT]?: unknown })[UNSENT] === true) out.valid = false;
    return out;
  }
  out.class = 'permanent';
  out.valid = false;
  out.problem =
    typeof result === 'object' && result !== null
      ? typeof (result as PromiseLike<unknown>).then === 'function'
        ? 'classify returned a promise (it must answer synchronously), not an error class'
        : `classify returned an object whose class is ${describe((result as Classification).class)}, not an error class`
      : `classify returned ${describe(result)}, not an error class`;
  return out;
}

function nonNegative(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}
