/**
 * `createPooledFetch`: a `fetch`-shaped function over a pool of base URLs.
 *
 * `pooledFetch('/v1/items', init)` sends the request to the first base URL the pool
 * selects, with the attempt's signal (timeouts, the deadline, the caller's `init.signal`
 * all abort it), and fails over by status (see `classify.ts`). Like `fetch`, it resolves
 * with a `Response` for any HTTP answer: when every attempt got an HTTP error, the last
 * response is returned (its body unread) unless `throwOnHttpError` is set. It rejects with
 * a `PoolError` when no HTTP answer came back at all (refused connections, timeouts) or
 * with `throwOnHttpError`. Bodies of responses it discards are cancelled so their sockets
 * are freed. Error messages name endpoints, never URLs.
 *
 * A request whose body is a stream cannot be replayed, so it gets one attempt.
 */
import type { Classifier } from '../base/classify.js';
import type { AttemptContext } from '../call/context.js';
import { isPoolError } from '../base/errors.js';
import type { EndpointConfig, ExecuteOptions, PoolOptions } from '../options/options.js';
import { Pool } from '../pool.js';
import { HttpStatusError, classifyFetchError, isHttpStatusError } from './classify.js';
import { DEFAULT_MAX_RETRY_AFTER_MS, parseRetryAfter } from './retry-after.js';
import { hostOf } from '../extras/host.js';

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
}

/** `init` plus per-call pool options. */
export type PooledRequestInit = RequestInit & { readonly pool?: ExecuteOptions };

export interface PooledFetch {
  (path: string, init?: PooledRequestInit): Promise<Response>;
  /** The pool underneath: stats, breaker states, `setEndpoints`, `close`. */
  readonly pool: Pool<string>;
}

export function createPooledFetch(options: PooledFetchOptions): PooledFetch {
  const { endpoints, fetch: fetchOption, maxRetryAfterMs = DEFAULT_MAX_RETRY_AFTER_MS, throwOnHttpError = false, classify = classifyFetchError, getToken, ...poolOptions } = options;
  const doFetch: FetchFn = fetchOption ?? ((url, init) => globalThis.fetch(url, init));
  const tokens = getToken === undefined ? undefined : new TokenCache(getToken);
  const pool = new Pool<string>({
    ...poolOptions,
    // With a token provider, a 401 means "refresh the token and replay", not a final answer.
    classify:
      tokens === undefined
        ? classify
        : (error) => (error instanceof MissingToken || (isHttpStatusError(error) && error.status === 401) ? 'unauthorized' : classify(error)),
    ...(tokens === undefined ? {} : { refreshAuth: (_base: string, ctx: AttemptContext) => tokens.refresh(ctx.endpoint, ctx.signal) }),
    endpoints: baseUrlEndpoints(endpoints),
  });

  const pooled = async (path: string, init: PooledRequestInit = {}): Promise<Response> => {
    if (typeof path !== 'string' || /^[a-z][a-z0-9+.-]*:/i.test(path)) {
      throw new TypeError('pooled fetch: expected a path relative to the base URLs, not an absolute URL');
    }
    const { pool: callOptions, signal, ...rest } = init;
    const replayable = rest.body === undefined || rest.body === null || !(typeof ReadableStream !== 'undefined' && rest.body instanceof ReadableStream);
    // A plain request (no per-call options, no caller signal) runs on the pool's shared plan.
    const execOptions: ExecuteOptions | undefined =
      callOptions === undefined && !signal && replayable
        ? undefined
        : { ...callOptions, ...(signal ? { signal } : {}), ...(replayable ? {} : { retry: 'none' as const }) };
    let seen: Response[] | undefined;
    let kept: Response | undefined;
    try {
      kept = await pool.execute(async (base, ctx) => {
        const headers = tokens === undefined ? rest.headers : tokens.authorize(ctx.endpoint, rest.headers);
        const req: RequestInit = { ...rest, signal: ctx.signal };
        if (headers !== undefined) req.headers = headers;
        const res = await doFetch(joinUrl(base, path), req);
        if (res.status < 400) return res;
        (seen ??= []).push(res);
        const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'), pool.clock.now(), maxRetryAfterMs);
        throw new HttpStatusError(res.status, { retryAfterMs, endpoint: ctx.endpoint, response: res });
      }, execOptions);
      return kept;
    } catch (error) {
      const cause = isPoolError(error) ? error.cause : undefined;
      if (!throwOnHttpError && isHttpStatusError(cause) && cause.response !== undefined && error instanceof Error && isAnswerCode(error)) {
        kept = cause.response;
        return kept;
      }
      throw error;
    } finally {
      if (seen !== undefined) for (const res of seen) if (res !== kept) discard(res);
    }
  };
  return Object.assign(pooled, { pool });
}

/**
 * Thrown by an attempt that has no token yet for its endpoint: classified `unauthorized`,
 * so the first token is fetched through the same single-flight refresh as a 401's.
 */
class MissingToken extends Error {
  override readonly name = 'MissingToken';
}

/** Bearer tokens per endpoint: fetched on first use and after a 401, through the pool's refresh. */
class TokenCache {
  readonly #get: (endpoint: string, signal: AbortSignal) => Promise<string>;
  readonly #tokens = new Map<string, string>();
  readonly #pending = new Map<string, Promise<string>>();

  constructor(get: (endpoint: string, signal: AbortSignal) => Promise<string>) {
    this.#get = get;
  }

  /** The request's headers with this endpoint's bearer token; throws `MissingToken` before the first one. */
  authorize(endpoint: string, headers: HeadersInit | undefined): Headers {
    const token = this.#tokens.get(endpoint);
    if (token === undefined) throw new MissingToken('no token yet for this endpoint');
    const out = new Headers(headers);
    out.set('authorization', `Bearer ${token}`);
    return out;
  }

  /** Replaces the endpoint's token (the pool calls this once per 401 wave). */
  async refresh(endpoint: string, signal: AbortSignal): Promise<void> {
    this.#tokens.delete(endpoint);
    await this.#fetch(endpoint, signal);
  }

  #fetch(endpoint: string, signal: AbortSignal): Promise<string> {
    let p = this.#pending.get(endpoint);
    if (p === undefined) {
      p = Promise.resolve(this.#get(endpoint, signal)).then((token) => {
        if (typeof token !== 'string' || token.length === 0) throw new TypeError('getToken must resolve to a non-empty string');
        this.#tokens.set(endpoint, token);
        return token;
      });
      const done = (): void => {
        this.#pending.delete(endpoint);
      };
      p.then(done, done);
      this.#pending.set(endpoint, p);
    }
    return p;
  }
}

/** Codes after which the last HTTP answer is the call's answer (not an abort, close or deadline). */
function isAnswerCode(error: Error): boolean {
  const code = (error as { code?: unknown }).code;
  return code === 'PERMANENT' || code === 'RETRIES_EXHAUSTED' || code === 'RETRY_NARROWER' || code === 'NO_ENDPOINT';
}

function discard(res: Response): void {
  if (res.body !== null && !res.bodyUsed) res.body.cancel().catch(() => undefined);
}

/** `base` + `path` with exactly one slash between them (a base's own path is kept). */
export function joinUrl(base: string, path: string): string {
  if (path === '') return base;
  const b = base.endsWith('/') ? base.slice(0, -1) : base;
  return path.startsWith('/') ? b + path : `${b}/${path}`;
}

function baseUrlEndpoints(list: readonly (string | BaseUrlEndpoint)[]): EndpointConfig<string>[] {
  if (!Array.isArray(list)) return list as never; // let the pool report the bad option
  const used = new Set<string>();
  return list.map((item, i) => {
    const e: BaseUrlEndpoint = typeof item === 'string' ? { url: item } : item;
    let name = e.name ?? hostOf(e.url) ?? `endpoint-${i}`;
    if (e.name === undefined && used.has(name)) name = `${name}#${i}`;
    used.add(name);
    const { url, name: _n, ...settings } = e;
    return { ...settings, name, conn: url };
  });
}

