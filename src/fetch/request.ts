/**
 * One pooled `fetch` request as its call carries it (the call's tag, see `taggedExecutor`):
 * what each attempt sends, the HTTP error answers the attempts received, and how the call
 * settles when it fails (like `fetch`: with the last error answer, else a rejection).
 */
import { PoolError, isPoolError } from '../base/errors.js';
import { redactError } from '../extras/redact.js';
import { ResponseBodyError, isHttpStatusError, type HttpStatusError } from './classify.js';
import { NotReplayableError, type ReplayGuard } from './replay.js';
import { RequestRefusedError } from './refused.js';
import type { RequestAborter } from './dispatcher.js';

/**
 * How the attempt reads the body: `'json'`, `'text'` or your own function. A body that
 * cannot be read (reset mid-body, truncated JSON) fails the attempt (a `ResponseBodyError`,
 * `transient` for `classifyFetchError`) and fails over.
 */
export type ParseBody<T = unknown> = 'json' | 'text' | ((res: Response) => Promise<T>);

/** One request, carried by its call as the tag: what each attempt sends and the error answers it got. */
export class FetchRequest {
  readonly path: string;
  /** `init` without the adapter's own fields and the caller's signal. */
  readonly init: RequestInit;
  readonly parse: ParseBody | undefined;
  readonly guard: ReplayGuard | undefined;
  /** Error answers seen by the attempts (most requests see none); their bodies are released unless one is the answer. */
  seen: Response[] | undefined = undefined;
  /** The call failed and took its answer (see `settleFailed`). */
  settled = false;
  /** A body `fetch` drains as it sends (a stream): the endpoint it went to, once it went (see `SpentBodyError`). */
  spentOn: string | undefined = undefined;
  /** The latest HTTP error answer an attempt got (set on that failure path only). */
  lastAnswer: HttpStatusError | undefined = undefined;

  constructor(path: string, init: RequestInit, parse: ParseBody | undefined, guard: ReplayGuard | undefined) {
    this.path = path;
    this.init = init;
    this.parse = parse;
    this.guard = guard;
  }
}

/**
 * How a failed call settles: like `fetch`, with the last HTTP error answer this call
 * received when every attempt got one (unless `throwOnHttpError` or `parse`), else a
 * rejection. The other error answers' bodies are released.
 */
export function settleFailed(thrown: PoolError, r: FetchRequest, throwOnHttpError: boolean): unknown {
  r.settled = true;
  const error = blameNotReplayable(thrown);
  const cause = isPoolError(error) ? error.cause : undefined;
  // Only an answer this call received: a NO_ENDPOINT's cause may be another call's failure
  // (the one that opened the breaker), whose response belongs to that call.
  const kept =
    !throwOnHttpError && r.parse === undefined && isHttpStatusError(cause) && cause.response !== undefined && r.seen?.includes(cause.response) === true && cause.response.bodyUsed !== true && error instanceof Error && isAnswerCode(error)
      ? cause.response
      : undefined;
  if (r.seen !== undefined) discardAll(r.seen, kept);
  if (kept !== undefined) return kept;
  throw error; // a settlement that throws is a rejection (call/plan.ts settlementOf), with no rejected promise in between
}

/** Releases every answer of `list` but `kept`, and empties the list. */
export function discardAll(list: Response[], kept: Response | undefined): void {
  for (const res of list.splice(0)) if (res !== kept) discard(res);
}

/**
 * A call ended by a non-replayable failure fails with that failure's message and endpoint, its
 * cause the original error; one ended by a request fetch refused, with that refusal's message,
 * its cause fetch's `TypeError`; one ended by a stream body's second send, with the answer the
 * first got (`UNAUTHORIZED` for a 401 whose token was refreshed).
 */
function blameNotReplayable(error: unknown): unknown {
  if (!isPoolError(error)) return error;
  const c = error.cause;
  if (c instanceof SpentBodyError) {
    return new PoolError(c.answer?.status === 401 ? 'UNAUTHORIZED' : 'PERMANENT', c.message, { cause: c.answer, attempts: error.attempts, endpoint: c.endpoint });
  }
  if (c instanceof RequestRefusedError) return new PoolError(error.code, c.message, { cause: c.cause, attempts: error.attempts, endpoint: error.endpoint });
  if (!(c instanceof NotReplayableError)) return error;
  return new PoolError(error.code, c.message, { cause: c.cause, attempts: error.attempts, endpoint: c.endpoint });
}

/**
 * Thrown (synchronously: the endpoint is not blamed) by an attempt about to send a stream body a
 * second time: after a 401 the pool refreshes the token and replays the request, whatever its
 * retry setting, but `fetch` drained the body the first time.
 */
export class SpentBodyError extends Error {
  override readonly name = 'SpentBodyError';
  readonly endpoint: string;
  /** The answer the request got where it went. */
  readonly answer: HttpStatusError | undefined;

  constructor(endpoint: string, answer: HttpStatusError | undefined) {
    const where = `endpoint ${JSON.stringify(endpoint)}`;
    super(
      answer?.status === 401
        ? `${where} answered HTTP 401; its token was refreshed, but the request is not sent again: its body is a stream, which fetch drains as it sends (a string, bytes or a Blob can be replayed)`
        : `the request's body is a stream, already sent to ${where}, and cannot be sent again`,
    );
    this.endpoint = endpoint;
    this.answer = answer;
  }
}

/**
 * Whether a call that failed with this error, its last error an HTTP answer, settles with that
 * answer: any way a call ends after its last attempt got an answer (its retries or endpoints
 * spent, a deadline or a rate limit's wait that would pass it: `DEADLINE_EXCEEDED`,
 * `RATE_LIMITED`), except the caller's abort and the pool's close, which reject as `fetch`
 * does, and `UNAUTHORIZED` (a token refused for good: see docs/fetch.md). A deadline that cut
 * an attempt has that attempt's timeout as its last error, and rejects.
 */
function isAnswerCode(error: Error): boolean {
  const code = (error as { code?: unknown }).code;
  return code !== 'ABORTED' && code !== 'CLOSED' && code !== 'UNAUTHORIZED';
}

/**
 * Cancels the body of an answer that is not the call's, so its socket is freed. A `fetch` mock
 * may answer a plain object (`{ ok, status, json }`): no body (undefined), no `cancel`.
 */
export function discard(res: Response): void {
  const body = (res as { readonly body?: ReadableStream | null }).body;
  if (body == null || res.bodyUsed === true || typeof body.cancel !== 'function') return;
  try {
    Promise.resolve(body.cancel()).catch(() => undefined);
  } catch {
    // a mock's cancel that throws: nothing to free
  }
}

/** A header of an error answer, or `null` (a mock's plain object may have no `headers`). */
export function headerOf(res: Response, name: string): string | null {
  const headers = (res as { readonly headers?: Headers | null }).headers;
  return typeof headers?.get === 'function' ? headers.get(name) : null;
}

/**
 * Reads and parses a body inside the attempt; a failure is a `ResponseBodyError` (redacted). A
 * `parse` that fails without reading the body (a check of the content type first) leaves it
 * unread: it is cancelled, or its socket stayed taken (one per call, until collected).
 */
export async function readBody(res: Response, parse: ParseBody, endpoint: string): Promise<unknown> {
  try {
    if (parse === 'json') return await res.json();
    if (parse === 'text') return await res.text();
    return await parse(res);
  } catch (error) {
    discard(res);
    throw new ResponseBodyError(res.status, endpoint, redactError(error));
  }
}

/**
 * `{ ...init, [key]: value }`, built another way: on Node 20 a spread followed by a member it
 * did not copy takes V8's slow path, about 1 µs a request (the member first, then the spread
 * over it, then the member again, is as fast as a plain copy everywhere).
 */
export function withMember(init: RequestInit, key: 'dispatcher' | 'signal', value: unknown): RequestInit {
  const out: Record<string, unknown> = key === 'dispatcher' ? { dispatcher: value, ...init } : { signal: value, ...init };
  out[key] = value;
  return out as RequestInit;
}

/** `T` with every field writable and `undefined` allowed. */
export type Settable<T> = { -readonly [K in keyof T]?: T[K] | undefined };

/** The abort of an attempt whose request may not be replayed: marks its guard, then closes the request. */
export class GuardedAbort {
  readonly #to: RequestAborter;
  readonly #guard: ReplayGuard;
  readonly #endpoint: string;

  constructor(to: RequestAborter, guard: ReplayGuard, endpoint: string) {
    this.#to = to;
    this.#guard = guard;
    this.#endpoint = endpoint;
  }

  abort(reason: unknown): void {
    this.#guard.aborted(this.#endpoint, reason);
    this.#to.abort(reason);
  }
}
