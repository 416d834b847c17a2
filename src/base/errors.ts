/**
 * The one error type the pool throws.
 *
 * Every rejection of `execute` is a `PoolError` with a stable string `code`, the native
 * `cause` (the operation's last error, when there was one), how many attempts were made
 * and the last endpoint tried. Messages are short and never carry a URL, a key or a
 * response body: the pool never looks inside a connection value or a response.
 *
 * `isPoolError` recognises errors from any copy of this package (a duplicated install,
 * a CJS and an ESM copy side by side) through a registered symbol, not `instanceof`.
 */

/** Why a call failed. */
export type PoolErrorCode =
  /** The operation failed with an error classified `permanent`. */
  | 'PERMANENT'
  /** The operation failed with an error classified `retry-narrower`. */
  | 'RETRY_NARROWER'
  /** Every attempt allowed by the retry policy failed. */
  | 'RETRIES_EXHAUSTED'
  /** The whole-call deadline passed. */
  | 'DEADLINE_EXCEEDED'
  /** No endpoint admits calls; `retryAfterMs` says when the first breaker lets a probe through. */
  | 'NO_ENDPOINT'
  /** The pinned endpoint cannot serve; the message says why. */
  | 'PIN_UNAVAILABLE'
  /** The caller's signal aborted the call. */
  | 'ABORTED'
  /** The pool was closed. */
  | 'CLOSED'
  /** One attempt ran past its timeout (found as the `cause` of other errors). */
  | 'ATTEMPT_TIMEOUT'
  /** An option given to the constructor or to `execute` is invalid. */
  | 'INVALID_OPTIONS'
  /** The endpoint answered `unauthorized` (again, after a credential refresh, or with no `refreshAuth`). */
  | 'UNAUTHORIZED'
  /** Refreshing credentials failed; `cause` is the refresh's error. */
  | 'AUTH'
  /** A retry was needed but the pool's retry budget is spent; `cause` is the last error. */
  | 'RETRY_BUDGET_EXHAUSTED'
  /** A quorum read found too few endpoints agreeing (`endpoint-pool/viem`, `endpoint-pool/ethers`); the error carries the answers. */
  | 'QUORUM_NOT_MET'
  /**
   * Rate limits leave no turn for the call in time: its turn (behind the calls queued
   * ahead, or after the server's Retry-After) would come after its deadline or after
   * `maxQueueWaitMs`. Failed at once, with `retryAfterMs` set to when that turn is.
   */
  | 'RATE_LIMITED';

const BRAND = Symbol.for('endpoint-pool.PoolError');

export interface PoolErrorDetails {
  readonly cause?: unknown;
  readonly attempts?: number;
  readonly endpoint?: string | undefined;
  readonly retryAfterMs?: number | undefined;
  /** For `INVALID_OPTIONS`: the path of the offending option, e.g. `endpoints[1].weight`. */
  readonly field?: string;
}

export class PoolError extends Error {
  override readonly name = 'PoolError' as const;
  readonly code: PoolErrorCode;
  /** Attempts made before the call gave up (0 when none started). */
  readonly attempts: number;
  /** The last endpoint an attempt went to, if any. */
  readonly endpoint: string | undefined;
  /** For `NO_ENDPOINT` and rate-limit related failures: when trying again makes sense. */
  readonly retryAfterMs: number | undefined;
  /** For `INVALID_OPTIONS`: which option was wrong. */
  readonly field: string | undefined;

  constructor(code: PoolErrorCode, message: string, details: PoolErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.attempts = details.attempts ?? 0;
    this.endpoint = details.endpoint;
    this.retryAfterMs = details.retryAfterMs;
    this.field = details.field;
  }

  /**
   * What `JSON.stringify` writes (a logged event's `error`): the fields (a subclass's too)
   * and the message, which an `Error`'s JSON leaves out; not the `cause` (the operation's
   * own error, which may hold a URL or a body).
   */
  toJSON(): object {
    return { ...this, message: this.message };
  }

  /** @internal marks instances for `isPoolError` across package copies. */
  get [BRAND](): true {
    return true;
  }
}

/** True for a `PoolError` from any copy of this package. */
export function isPoolError(value: unknown): value is PoolError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}

/** Builds the `INVALID_OPTIONS` error: names the field, what was expected and what was given. */
export function invalidOption(field: string, expected: string, got: unknown): PoolError {
  return new PoolError('INVALID_OPTIONS', `${field}: expected ${expected}, got ${describe(got)}`, { field });
}

/** A name or a choice: 24 characters at most, shorter than the API keys of the usual providers (32-64). */
const PLAIN = /^[\w.-]{0,24}$/;

/** A short, secret-free description of a value for error messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  switch (typeof value) {
    case 'number':
    case 'boolean':
    case 'bigint':
    case 'undefined':
      return String(value);
    case 'string':
      // Echo only what reads as a name or a choice; a URL, query, header or key-value pair
      // given to the wrong option must not travel into logs.
      return PLAIN.test(value) ? JSON.stringify(value) : `a string of ${value.length} characters`;
    case 'function':
    case 'symbol':
      return `a ${typeof value}`;
    default:
      return 'an object';
  }
}

/**
 * The message of an `UNAUTHORIZED` failure with no credential refresh to try (no
 * `refreshAuth`, the pool closed, or a pool built without the auth feature).
 */
export function unauthorizedMessage(endpoint: string): string {
  return `endpoint ${JSON.stringify(endpoint)} answered unauthorized`;
}

/**
 * Rejects the promise a `then`/`catch` handler derives, by a throw: a handler that returned
 * `Promise.reject(error)` would leave a rejected promise with no handler until the derived one
 * adopts it a turn later (Deno tracks each such promise in a list it searches: a mass failure
 * grows quadratic there; see call/plan.ts `Rejection`).
 */
export function throwIt(error: unknown): never {
  throw error;
}
