/**
 * HTTP status → error class, for pools whose endpoints speak HTTP.
 *
 * | status                         | class          |
 * |--------------------------------|----------------|
 * | 1xx, 2xx, 3xx                  | `'ok'`         |
 * | 408, 429                       | `rate-limited` (hint from `Retry-After`; a 429's rate-limit reset headers without it) |
 * | 503 with `Retry-After`         | `rate-limited` (the server says when it has room) |
 * | other 5xx                      | `transient`    |
 * | 401, 402, 403, 405             | `unsupported`: about this endpoint (its key, its plan, its credit), try another |
 * | other 4xx                      | `permanent`    |
 * | no response (network, reset)   | `transient`    |
 *
 * `HttpStatusError` is what the pooled fetch throws into the pool for a non-2xx answer,
 * so that `classifyFetchError` can read the status back; its message carries the status
 * and the endpoint name, never a URL.
 */
import { invalidOption } from '../base/errors.js';
import type { ClassifyResult } from '../base/classify.js';
import { systemClock, wallNow } from '../base/clock.js';
import { DEFAULT_MAX_RETRY_AFTER_MS, waitAskedMs } from './retry-after.js';

const BRAND = Symbol.for('endpoint-pool.HttpStatusError');

/** A non-2xx HTTP answer, carried through the pool as an error. */
export class HttpStatusError extends Error {
  override readonly name = 'HttpStatusError' as const;
  readonly code = 'HTTP_STATUS' as const;
  readonly status: number;
  /** The parsed and clamped `Retry-After`, in milliseconds. */
  readonly retryAfterMs: number | undefined;
  /** The endpoint that answered. */
  readonly endpoint: string | undefined;
  /**
   * The response itself (body unread), so a caller can still inspect it. Not enumerable:
   * its `url` holds the full request URL (keys included), so `console.log(error)` and
   * events printed as they are never show it.
   */
  declare readonly response: Response | undefined;

  constructor(status: number, details: { retryAfterMs?: number | undefined; endpoint?: string | undefined; response?: Response | undefined } = {}) {
    super(details.endpoint === undefined ? `HTTP ${status}` : `endpoint ${JSON.stringify(details.endpoint)} answered HTTP ${status}`);
    this.status = status;
    this.retryAfterMs = details.retryAfterMs;
    this.endpoint = details.endpoint;
    Object.defineProperty(this, 'response', { value: details.response, enumerable: false });
  }

  /** @internal marks instances for `isHttpStatusError` across package copies. */
  get [BRAND](): true {
    return true;
  }
}

/**
 * The body of a successful answer could not be read or parsed (a reset mid-body, a
 * truncated or malformed JSON, a `parse` function that threw): the attempt failed.
 * `classifyFetchError` counts it `transient` (fine for reads); classify it `permanent`
 * for requests that must not be repeated.
 */
export class ResponseBodyError extends Error {
  override readonly name = 'ResponseBodyError' as const;
  readonly code = 'RESPONSE_BODY' as const;
  readonly status: number;
  readonly endpoint: string;

  constructor(status: number, endpoint: string, cause: unknown) {
    super(`endpoint ${JSON.stringify(endpoint)} answered HTTP ${status} with a body that could not be read`, { cause });
    this.status = status;
    this.endpoint = endpoint;
  }
}

/** True for an `HttpStatusError` from any copy of this package. */
export function isHttpStatusError(value: unknown): value is HttpStatusError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}

/** The class of an HTTP status; `'ok'` for anything below 400. */
export function classifyStatus(status: number, retryAfterMs?: number): ClassifyResult | 'ok' {
  if (status < 400) return 'ok';
  if (status === 408 || status === 429 || (status === 503 && retryAfterMs !== undefined)) {
    return retryAfterMs === undefined ? 'rate-limited' : { class: 'rate-limited', retryAfterMs };
  }
  if (status >= 500) return 'transient';
  // A rejected key, a plan without the resource or out of credit (402: dRPC's free tier, a
  // prepaid key spent), a method the gateway refuses: about this endpoint, not the request
  // (as in the viem and ethers tables). Another endpoint is tried at once, none twice; when
  // all refuse, the last answer is the call's.
  if (status === 401 || status === 402 || status === 403 || status === 405) return 'unsupported';
  return 'permanent';
}

export interface ClassifyResponseOptions {
  /** The current time, for `Retry-After` given as a date. @default the system clock */
  readonly nowMs?: number;
  /** Longest `Retry-After` honoured. @default 60000 */
  readonly maxRetryAfterMs?: number;
}

/** Minimal shape of a fetch `Response` this module reads. */
export interface ResponseLike {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
}

/** The class of a response: `'ok'`, or how the pool should treat it. */
export function classifyResponse(res: ResponseLike, options: ClassifyResponseOptions = {}): ClassifyResult | 'ok' {
  const r = res as Partial<ResponseLike> | null | undefined;
  if (typeof r !== 'object' || r === null || typeof r.status !== 'number' || typeof r.headers?.get !== 'function') throw invalidOption('res', 'a Response ({ status, headers })', res);
  if (res.status < 400) return 'ok';
  const retryAfterMs = waitAskedMs((name) => res.headers.get(name), res.status, options.nowMs ?? wallNow(systemClock), options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS);
  return classifyStatus(res.status, retryAfterMs);
}

/**
 * A pool `classify` for fetch-based operations: an `HttpStatusError` by its status,
 * anything else (fetch's `TypeError` for a refused or reset connection, an abort from
 * the fetch implementation itself) as `transient`.
 */
export function classifyFetchError(error: unknown): ClassifyResult {
  if (isHttpStatusError(error)) {
    const c = classifyStatus(error.status, error.retryAfterMs);
    // A 2xx never becomes an HttpStatusError; if a caller builds one anyway, it is not a failure we can fix.
    return c === 'ok' ? 'permanent' : c;
  }
  return 'transient';
}
