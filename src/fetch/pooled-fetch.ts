/**
 * `createPooledFetch`: a `fetch`-shaped function over a pool of base URLs.
 *
 * `pooledFetch('/v1/items', init)` sends the request to the first base URL the pool
 * selects, aborted when the attempt is (timeouts, the deadline, the caller's `init.signal`:
 * through a dispatcher on Node's `fetch`, see `dispatcher.ts`, else the attempt's signal),
 * and fails over by status (see `classify.ts`). Like `fetch`, it resolves
 * with a `Response` for any HTTP answer: when every attempt got an HTTP error, the last
 * response is returned (its body unread) unless `throwOnHttpError` is set. It rejects with
 * a `PoolError` when no HTTP answer came back at all (refused connections, timeouts) or
 * with `throwOnHttpError`. Bodies of responses it discards are cancelled so their sockets
 * are freed. Error messages name endpoints, never URLs.
 *
 * A request whose body is a stream (a `ReadableStream` or another async iterable) cannot be
 * replayed, so it gets one attempt. A request
 * that is not idempotent (POST, PATCH) is not replayed after a failure that may have
 * reached the server, unless marked or keyed (see `replay.ts`). The first argument may be
 * a path, or an absolute URL, `URL` or `Request` under one of the base URLs (see `input.ts`).
 */
import { UNSENT, type ClassifyResult, type Classifier } from '../base/classify.js';
import type { AttemptContext } from '../call/context.js';
import type { EndpointConfig, ExecuteOptions, PoolOptions } from '../options/options.js';
import { Pool, taggedExecutor } from '../pool.js';
import { defaultDeadlineMs } from '../pool-core.js';
import { HttpStatusError, classifyFetchError, isHttpStatusError } from './classify.js';
import { DEFAULT_MAX_RETRY_AFTER_MS, waitAskedMs } from './retry-after.js';
import { hostOf } from '../extras/host.js';
import { redactError } from '../extras/redact.js';
import { wallNow } from '../base/clock.js';
import { PoolError, invalidOption, throwIt } from '../base/errors.js';
import { POOL_ALIASES, POOL_KEYS } from '../options/resolve.js';
import { checkFunction, checkKeys, finite, oneOf, type KnownKeys } from '../options/validate.js';
import { checkUrlOption } from '../extras/url-option.js';
import { normalizeBase, pathOf, resolveInput, urlJoiner, type BodyBound } from './input.js';
import { NotReplayableError, checkHeaders, isOneShotBody, replayGuard, resolveReplay } from './replay.js';
import { MissingToken, TokenCache } from './tokens.js';
import { RequestRefusedError, refusalOf } from './refused.js';
import { abortRoute, hasOwnDispatcher, type RequestAborter } from './dispatcher.js';
import { FetchRequest, GuardedAbort, SpentBodyError, discard, discardAll, headerOf, readBody, settleFailed, withMember, type ParseBody, type Settable } from './request.js';

export type { ParseBody } from './request.js';

/** The subset of `fetch` this adapter calls. */
export type FetchFn = (url: string, init: RequestInit) => Promise<Response>;

/** A base URL with its pool settings; `name` defaults to the URL's host. */
export type BaseUrlEndpoint = Omit<EndpointConfig<string>, 'conn' | 'name'> & { readonly url: string; readonly name?: string };

export interface PooledFetchOptions extends Omit<PoolOptions<string>, 'endpoints' | 'classify'> {
  /** Base URLs (a path is appended to each), plain or with settings. */
  readonly endpoints: readonly (string | BaseUrlEndpoint)[];
  /** @default classifyFetchError */
  readonly classify?: Classifier;
  /** @default globalThis.fetch */
  readonly fetch?: FetchFn;
  /** Longest `Retry-After` honoured, in milliseconds. @default 60000 */
  readonly maxRetryAfterMs?: number;
  /**
   * Reject with a `PoolError` instead of resolving with the last HTTP error response (its
   * `cause`, an `HttpStatusError`, keeps status and headers; the body is released). @default false
   */
  readonly throwOnHttpError?: boolean;
  /**
   * A bearer-token provider, called lazily for an endpoint's first request and again
   * after a `401` (through the pool's single-flight `refreshAuth`: fifty requests that
   * hit a 401 together fetch one new token, and each is replayed once at no retry cost).
   * The token goes in the `authorization` header as `Bearer <token>`. @default none
   */
  readonly getToken?: (endpoint: string, signal: AbortSignal) => Promise<string>;
  /**
   * Which requests are sent again after a failure that may have reached the server (a
   * timeout, a reset, a 5xx): `'idempotent'` replays GET, HEAD, OPTIONS, PUT, DELETE and
   * TRACE, calls marked `idempotent: true` and requests carrying an idempotency key;
   * `'always'` replays every request. A failure that proves the request was not processed
   * (connection refused, 408, 429) moves on whatever this says. @default 'idempotent'
   */
  readonly replay?: 'idempotent' | 'always';
  /**
   * The idempotency-key header: its presence makes a request replayable. `true` adds a
   * random UUID to requests that are not idempotent and have none (one key per call, the
   * same on every attempt); a function makes the key; a string names the header (no key
   * added). @default 'idempotency-key', none added
   */
  readonly idempotencyKey?: boolean | string | (() => string);
}

/** `init` plus per-call pool options. */

export type PooledRequestInit = RequestInit & {
  readonly pool?: ExecuteOptions;
  /**
   * Read the body inside the attempt and resolve with it (see `ParseBody`). With `parse`,
   * an HTTP error answer rejects (as with `throwOnHttpError`). @default none: resolve with the `Response`, body unread
   */
  readonly parse?: ParseBody;
  /** `true`: safe to send more than once (replayed after any failure); `false`: never replayed after it may have reached the server. @default by method and idempotency key */
  readonly idempotent?: boolean;
};

export interface PooledFetch {
  /** `input`: a path relative to the base URLs, or an absolute URL, `URL` or `Request` under one of them. */
  (input: string | URL | Request, init?: PooledRequestInit & { readonly parse?: undefined }): Promise<Response>;
  (input: string | URL | Request, init: PooledRequestInit & { readonly parse: 'text' }): Promise<string>;
  <T = unknown>(input: string | URL | Request, init: PooledRequestInit & { readonly parse: 'json' | ((res: Response) => Promise<T>) }): Promise<T>;
  /** The pool underneath: stats, breaker states, `setEndpoints`, `close`. */
  readonly pool: Pool<string>;
}

const FETCH_KEYS: Record<keyof PooledFetchOptions, true> & KnownKeys = {
  ...POOL_KEYS,
  fetch: true,
  maxRetryAfterMs: true,
  throwOnHttpError: true,
  getToken: true,
  replay: true,
  idempotencyKey: true,
};

export function createPooledFetch(options: PooledFetchOptions): PooledFetch {
  if (typeof options === 'object' && options !== null) checkKeys('options', options as unknown as Record<string, unknown>, FETCH_KEYS, POOL_ALIASES);
  const { endpoints, fetch: fetchOption, maxRetryAfterMs = DEFAULT_MAX_RETRY_AFTER_MS, throwOnHttpError = false, classify: userClassify = classifyFetchError, getToken, replay, idempotencyKey, ...poolOptions } = options;
  checkAdapterOptions(options);
  const replayOptions = resolveReplay(replay, idempotencyKey);
  // A request fetch refused sent nothing: the call ends, and the endpoint is not blamed (UNSENT).
  const classify: Classifier = (error) => (error instanceof NotReplayableError ? 'permanent' : error instanceof RequestRefusedError ? REFUSED : userClassify(error));
  const doFetch: FetchFn = fetchOption ?? ((url, init) => globalThis.fetch(url, init));
  const tokens = getToken === undefined ? undefined : new TokenCache(getToken);
  const pool = new Pool<string>({
    ...poolOptions,
    // With a token provider, a 401 means "refresh the token and replay", not a final answer.
    classify:
      tokens === undefined
        ? classify
        : (error) => (error instanceof MissingToken || (isHttpStatusError(error) && error.status === 401) ? 'unauthorized' : classify(error)),
    ...(tokens === undefined ? {} : { refreshAuth: (base: string, ctx: AttemptContext) => tokens.refresh(ctx.endpoint, base, ctx.signal) }),
    endpoints: baseUrlEndpoints(endpoints),
  });
  // The base URLs an absolute request URL may start with: the endpoints' own, and those
  // `pool.setEndpoints` brings later (one set before stays: its URLs still name a path).
  const bases = Array.isArray(endpoints) ? endpoints.map((e) => normalizeBase(typeof e === 'string' ? e : e.url)) : [];
  const setEndpoints = pool.setEndpoints.bind(pool);
  pool.setEndpoints = (list, groups) => {
    setEndpoints(list, groups);
    tokens?.keep(pool.endpointNames);
    for (const e of list) {
      const base = typeof e.conn === 'string' ? normalizeBase(e.conn) : undefined;
      if (base !== undefined && !bases.includes(base)) bases.push(base);
    }
  };
  const hedging = poolOptions.hedge !== undefined;

  // A failed call settles here: with its last HTTP error answer (like `fetch`) or a rejection.
  const execute = taggedExecutor(pool, (error, tag) => settleFailed(error, tag as FetchRequest, throwOnHttpError));
  // One operation for every request: the request rides on the call as its tag (no closure per request).
  // Not an async function: no generator and await closures per request (heap, and one turn).
  const send = (base: string, ctx: AttemptContext): Promise<unknown> => {
    const r = (ctx as unknown as { readonly tag: FetchRequest }).tag;
    let headers: HeadersInit | undefined;
    try {
      headers = tokens === undefined ? r.init.headers : tokens.authorize(ctx.endpoint, base, r.init.headers);
    } catch (error) {
      return Promise.reject(error); // MissingToken: a failure of the attempt, not a synchronous throw
    }
    // How the attempt's abort reaches the request: on Node, once the global fetch is known to
    // take one, through a dispatcher (no signal: undici's cost of any signal is most of what
    // a pooled request adds; see dispatcher.ts); else through the attempt's signal. A replay
    // guard hears the abort too.
    const guard = r.guard;
    const own = fetchOption !== undefined || (r.init !== NO_INIT && hasOwnDispatcher(r.init));
    const { signal, dispatcher } = abortRoute(ctx, own, guard === undefined ? undefined : (aborter) => new GuardedAbort(aborter, guard, ctx.endpoint));
    let req: RequestInit;
    if (signal === undefined) {
      req = (r.init === NO_INIT ? { dispatcher } : withMember(r.init, 'dispatcher', dispatcher)) as RequestInit;
    } else {
      // The attempt's signal only: a body read after the call returned is not covered by the
      // caller's signal (AbortSignal.any over a long-lived caller signal grows without bound
      // on Node 20: 9 MB over 150,000 requests; see docs/fetch.md and bench/notes/newuser.md).
      guard?.watch(signal, ctx.endpoint);
      req = r.init === NO_INIT ? { signal } : withMember(r.init, 'signal', signal);
      // Probing: does this global fetch call an init.dispatcher? (The signal aborts this request.)
      if (dispatcher !== undefined) (req as { dispatcher?: RequestAborter }).dispatcher = dispatcher;
    }
    if (headers !== undefined) req.headers = headers;
    let sent: Promise<Response>;
    try {
      sent = Promise.resolve(doFetch(urlOf(base, r.path), req));
    } catch (error) {
      // Thrown before it returned a promise: nothing was sent, so nothing to blame (a request
      // that may not be replayed still moves on).
      return Promise.reject(redactError(error));
    }
    return sent.then(
      (res) => {
        dispatcher?.answered();
        return answered(r, ctx, res);
      },
      // Without a replay guard, a rejection needs nothing of this request: one closure fewer.
      r.guard === undefined ? refused : (error: unknown) => throwIt(fetchFailed(r, ctx, error)),
    );
  };
  /** What `fetch` rejected with, redacted (a request without a replay guard); a request it refused is the request's fault. */
  const refused = (error: unknown): never => throwIt(refusalOf(redactError(error)));
  const urlOf = urlJoiner();
  /** What `fetch` rejected with, redacted (and blamed on a request that may not be replayed). */
  const fetchFailed = (r: FetchRequest, ctx: AttemptContext, error: unknown): unknown => {
    const redacted = refusalOf(redactError(error));
    return r.guard === undefined ? redacted : r.guard.failed(ctx.endpoint, redacted);
  };
  /** The attempt's outcome for an HTTP answer: the response (or its parsed body), or a failure. */
  const answered = (r: FetchRequest, ctx: AttemptContext, res: Response): unknown => {
    if (res.status < 400) {
      // An earlier attempt's error answers are not the call's answer any more.
      if (r.seen !== undefined && !r.settled) discardAll(r.seen, undefined);
      if (r.parse === undefined) return res;
      // The server answered: a body that breaks on the way is a failure after processing.
      const guard = r.guard;
      return guard === undefined ? readBody(res, r.parse, ctx.endpoint) : readBody(res, r.parse, ctx.endpoint).catch((error: unknown) => throwIt(guard.failed(ctx.endpoint, error)));
    }
    // An answer after the call settled (a hedge's) is nobody's: released at once.
    if (r.settled) discard(res);
    else (r.seen ??= []).push(res);
    const retryAfterMs = waitAskedMs((name) => headerOf(res, name), res.status, wallNow(pool.clock), maxRetryAfterMs);
    const failure = (r.lastAnswer = new HttpStatusError(res.status, { retryAfterMs, endpoint: ctx.endpoint, response: res }));
    throw r.guard === undefined || res.status < 500 ? failure : r.guard.failed(ctx.endpoint, failure);
  };
  // A replay that must not happen throws synchronously: the call ends, and the endpoint's breaker is not touched.
  const guardedSend = (base: string, ctx: AttemptContext): Promise<unknown> => {
    (ctx as unknown as { readonly tag: FetchRequest }).tag.guard!.enter();
    return send(base, ctx);
  };
  // A stream body goes out once. Its call has one attempt, but a 401 with `getToken` is replayed
  // whatever the retry setting: that second send ends the call instead (before, the drained
  // stream was sent again and undici refused it: "Response body object should not be disturbed").
  // An attempt stopped for want of a token (MissingToken) sends nothing.
  const oneShotSend = (base: string, ctx: AttemptContext): Promise<unknown> => {
    const r = (ctx as unknown as { readonly tag: FetchRequest }).tag;
    r.guard?.enter();
    if (r.spentOn !== undefined) throw new SpentBodyError(r.spentOn, r.lastAnswer);
    if (tokens === undefined || tokens.has(ctx.endpoint, base)) r.spentOn = ctx.endpoint;
    return send(base, ctx);
  };

  const start = (path: string, init: PooledRequestInit): Promise<unknown> => {
    // A request given no init sends `{ signal }` alone (see `send`): nothing to copy here.
    let callOptions: ExecuteOptions | undefined;
    let signal: AbortSignal | null | undefined;
    let idempotent: boolean | undefined;
    let parse: ParseBody | undefined;
    let rest: RequestInit = NO_INIT;
    if (init !== NO_INIT) ({ pool: callOptions, signal, idempotent, parse, ...rest } = init);
    if (parse !== undefined && parse !== 'json' && parse !== 'text' && typeof parse !== 'function') {
      throw invalidOption('parse', "'json', 'text' or a function (res) => Promise", parse);
    }
    if (idempotent !== undefined && typeof idempotent !== 'boolean') throw invalidOption('idempotent', 'a boolean', idempotent);
    // Spread below, a number or a string would be dropped in silence: the pool's options are an object.
    if (callOptions !== undefined && (typeof callOptions !== 'object' || callOptions === null)) throw invalidOption('pool', "the pool's per-call options ({ deadlineMs, retry, pin, ... })", callOptions);
    if (rest.headers !== undefined) checkHeaders(rest.headers);
    const replayable = !isOneShotBody(rest.body);
    const replayPlan = replayGuard(rest, idempotent ?? callOptions?.idempotent, replayOptions);
    if (replayPlan?.headers !== undefined) rest = { ...rest, headers: replayPlan.headers };
    const guard = replayPlan?.guard;
    // A plain request (no per-call options, no caller signal, a replayable body) runs on
    // the pool's shared default plan: no options object to check per request.
    // With the pool's `hedge` set, a request safe to send twice at once is hedged: a safe
    // method (GET, HEAD, OPTIONS) or one marked `idempotent: true`, unless its options say otherwise.
    const hedged = hedging && replayable && callOptions?.idempotent === undefined && (idempotent === true || (idempotent === undefined && isSafeMethod(rest.method)));
    let execOptions: ExecuteOptions | undefined;
    if (callOptions !== undefined || signal || !replayable || hedged) {
      // The fields this may set come first, then the caller's options over them (a spread
      // followed by fields it did not copy is V8's slow path on Node 20: see `withMember`).
      // The pool reads a field set to `undefined` as one not given.
      const o: Settable<ExecuteOptions> = { idempotent: undefined, signal: undefined, retry: undefined, ...callOptions };
      if (hedged) o.idempotent = true; // only when the caller's options leave it unset
      if (signal) o.signal = signal;
      if (!replayable) o.retry = 'none';
      execOptions = o as ExecuteOptions;
    }
    return execute(!replayable ? oneShotSend : guard === undefined ? send : guardedSend, new FetchRequest(path, rest, parse, guard), execOptions);
  };

  /** What bounds the read of a Request's body (made once: the pool's clock and default deadline do not change). */
  const bodyBound: BodyBound = { clock: pool.clock, deadlineMs: defaultDeadlineMs(pool) };
  // Not an async function: a plain request costs no promise of its own (errors before the call still reject).
  const pooled = (input: string | URL | Request, given?: PooledRequestInit): Promise<unknown> => {
    try {
      if (typeof input === 'string' && given === undefined) return start(pathOf(input, bases), NO_INIT);
      // As fetch reads it, null is no init; a number or a string would be read as one in silence.
      if (given !== undefined && given !== null && typeof given !== 'object') throw invalidOption('init', 'a RequestInit object', given);
      const resolved = resolveInput(input, given ?? NO_INIT, bases, bodyBound);
      return resolved instanceof Promise ? resolved.then((r) => start(r.path, r.init)) : start(resolved.path, resolved.init);
    } catch (error) {
      return Promise.reject(error);
    }
  };
  return Object.assign(pooled, { pool }) as PooledFetch;
}

/** The class of a request fetch refused: final, and nothing reached the endpoint. */
const REFUSED = { class: 'permanent', [UNSENT]: true } as ClassifyResult;

/** The `init` of a request given none (never changed: `start` copies what it sends). */
const NO_INIT: PooledRequestInit = Object.freeze({});

/**
 * The adapter's own options, checked like the pool's: an `INVALID_OPTIONS` naming the
 * field. (The pool checks its options itself; a base URL is not echoed, it may hold a key.)
 */
function checkAdapterOptions(o: PooledFetchOptions): void {
  const given = o as unknown as Record<string, unknown>;
  checkFunction('fetch', given['fetch'], true);
  checkFunction('classify', given['classify'], true);
  checkFunction('getToken', given['getToken'], true);
  if (given['maxRetryAfterMs'] !== Infinity) finite('maxRetryAfterMs', given['maxRetryAfterMs'], 0);
  const thrown = given['throwOnHttpError'];
  if (thrown !== undefined && typeof thrown !== 'boolean') throw invalidOption('throwOnHttpError', 'a boolean', thrown);
  oneOf('replay', given['replay'], ['idempotent', 'always'], 'idempotent');
  const key = given['idempotencyKey'];
  if (key !== undefined && typeof key !== 'boolean' && typeof key !== 'function' && (typeof key !== 'string' || key === '')) {
    throw invalidOption('idempotencyKey', 'a boolean, a header name or a function', key);
  }
  const list = given['endpoints'];
  if (!Array.isArray(list)) return; // the pool reports it
  list.forEach((item: unknown, i) => {
    const field = `endpoints[${i}]`;
    const url = typeof item === 'string' ? item : typeof item === 'object' && item !== null ? (item as Record<string, unknown>)['url'] : item;
    const at = typeof item === 'object' && item !== null ? `${field}.url` : field;
    if (typeof item === 'object' && item !== null && url === undefined && 'conn' in item) {
      throw new PoolError('INVALID_OPTIONS', `${at}: expected a base URL; a pooled fetch's endpoints take \`url\`, not \`conn\``, { field: at });
    }
    checkUrlOption(at, url);
  });
}

/** GET, HEAD and OPTIONS (no method: GET): safe to have in flight twice at once. */
function isSafeMethod(method: string | undefined): boolean {
  if (method === undefined) return true;
  const m = method.toUpperCase();
  return m === 'GET' || m === 'HEAD' || m === 'OPTIONS';
}

function baseUrlEndpoints(list: readonly (string | BaseUrlEndpoint)[]): EndpointConfig<string>[] {
  if (!Array.isArray(list)) return list as never; // let the pool report the bad option
  const used = new Set<string>();
  return list.map((item, i) => {
    const e: BaseUrlEndpoint = typeof item === 'string' ? { url: item } : item;
    // Only a missing name is derived: a wrong one (null, '') is the pool's to refuse, naming the field.
    let name = e.name === undefined ? (hostOf(e.url) ?? `endpoint-${i}`) : e.name;
    if (e.name === undefined && used.has(name)) name = `${name}#${i}`;
    used.add(name);
    const { url, name: _n, ...settings } = e;
    return { ...settings, name, conn: url };
  });
}
