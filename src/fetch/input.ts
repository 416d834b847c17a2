/**
 * What `createPooledFetch` accepts as its first argument, so that it can be handed to an
 * SDK as its `fetch`: a path relative to the base URLs, or an absolute URL (a string, a
 * `URL`, a `Request`) that starts with one of the endpoints' base URLs, whose remainder is
 * then the path. A `Request`'s method, headers and body are used unless `init` overrides
 * them; its body is read once, so that it can be replayed, within the call's deadline and
 * signal (see `request-body.ts`).
 */

import type { Clock } from '../base/clock.js';
import { readBounded } from './request-body.js';

export interface ResolvedInput<I> {
  readonly path: string;
  readonly init: I;
}

/** Each watched Request signal's Request (see `resolveInput`): an entry lives as long as its signal. */
const requestOf = new WeakMap<AbortSignal, Request>();

/**
 * `input` as a path relative to the base URLs, with `init` completed from a `Request`.
 * Synchronous (no promise, no extra turn) except for a `Request` whose body must be read.
 */
export function resolveInput<I extends RequestInit>(input: unknown, init: I, bases: readonly string[], bound: BodyBound): ResolvedInput<I> | Promise<ResolvedInput<I>> {
  if (typeof input === 'string') return { path: pathOf(input, bases), init };
  if (typeof URL !== 'undefined' && input instanceof URL) return { path: pathOf(input.href, bases), init };
  if (typeof Request !== 'undefined' && input instanceof Request) {
    const path = pathOf(input.url, bases);
    const signal = input.signal;
    // A Request's signal follows the caller's through the Request's own controller, which
    // the caller's signal reaches only by a weak reference (undici, Node 20 to 26): once the
    // Request is collected its signal never aborts (nodejs/node#55428). The pool watches the
    // signal, not the Request: keep the Request for as long as its signal is reachable. (A
    // copy of a Request follows its source's signal through the source, out of reach here.)
    if (!signal.aborted) requestOf.set(signal, input);
    const merged: RequestInit = { method: input.method, headers: input.headers, signal };
    if (input.body === null || init.body !== undefined) return { path, init: over(merged, init) };
    // Read within the call's deadline (a per-call one, else the pool's) and its signal (init's, else the Request's).
    const asked = (init as { readonly pool?: { readonly deadlineMs?: unknown } | null }).pool?.deadlineMs;
    const deadlineMs = typeof asked === 'number' && asked > 0 ? asked : bound.deadlineMs;
    return readBounded(input.body, deadlineMs, init.signal !== undefined ? init.signal : signal, bound.clock).then((body) => ({ path, init: over({ ...merged, body }, init) }));
  }
  throw new TypeError('pooled fetch: expected a path, an absolute URL, a URL or a Request');
}

/** What bounds the read of a Request's body: the pool's clock and default deadline. */
export interface BodyBound {
  readonly clock: Clock;
  readonly deadlineMs: number;
}

/**
 * The Request's settings with `init`'s on top; a member of `init` that is `undefined` counts
 * as absent, as `fetch` reads it (`fetch(request, { signal: undefined })` keeps the
 * Request's signal, method and headers).
 */
function over<I extends RequestInit>(fromRequest: RequestInit, init: I): I {
  const out: Record<string, unknown> = { ...fromRequest };
  for (const [k, v] of Object.entries(init)) if (v !== undefined) out[k] = v;
  return out as I;
}

/**
 * A base URL as the URL parser writes it (lower-case scheme and host, no default port,
 * percent-encoded path), without a trailing slash: `URL`s and `Request`s are written that
 * way, so `https://API.example.com:443/v1` must match `new URL('https://api.example.com/v1/x')`.
 */
export function normalizeBase(base: string): string {
  let href = base;
  try {
    const u = new URL(base);
    u.hash = '';
    href = u.href;
  } catch {
    // not a URL: matched as it is (the adapter's options check rejects it first)
  }
  return href.endsWith('/') ? href.slice(0, -1) : href;
}

/** The path of `url` under the first base URL it starts with; a relative path as it is. `bases` are normalized (`normalizeBase`). */
export function pathOf(given: string, bases: readonly string[]): string {
  // A path that starts with a slash (most of them) has no scheme: no pattern to run.
  if (given.charCodeAt(0) === 47 || !/^[a-z][a-z0-9+.-]*:/i.test(given)) return given;
  let url = given;
  try {
    url = new URL(given).href;
  } catch {
    // left as given: it then matches no base
  }
  for (const b of bases) {
    if (!url.startsWith(b)) continue;
    const rest = url.slice(b.length);
    // A boundary, so that https://api.example.com does not match https://api.example.community.
    if (rest === '' || rest[0] === '/' || rest[0] === '?' || rest[0] === '#') return rest;
  }
  // The URL is not echoed: it may carry a key.
  throw new TypeError(`pooled fetch: the absolute URL matches none of the ${bases.length} endpoints' base URLs; pass a path relative to them, or a URL that starts with one`);
}

/**
 * `joinUrl` remembering its last answer: most requests repeat one path on one base, and get
 * the same string again (no concatenation, and undici's URL parser is given a flat string).
 */
export function urlJoiner(): (base: string, path: string) => string {
  let lastBase = '';
  let lastPath: string | undefined;
  let lastUrl = '';
  return (base, path) => {
    if (path !== lastPath || base !== lastBase) {
      lastUrl = joinUrl(base, path);
      lastBase = base;
      lastPath = path;
    }
    return lastUrl;
  };
}

/**
 * `base` + `path` with exactly one slash between them (a base's own path is kept). A base
 * with a query (`https://api.example/v1?apikey=K`) keeps it after the joined path, before
 * the path's own query: `/items?limit=2` gives `https://api.example/v1/items?apikey=K&limit=2`.
 */
export function joinUrl(base: string, path: string): string {
  if (path === '') return base;
  const q = base.indexOf('?');
  if (q !== -1) return withQuery(joinUrl(base.slice(0, q), path), base.slice(q + 1));
  const b = base.endsWith('/') ? base.slice(0, -1) : base;
  return path.startsWith('/') ? b + path : `${b}/${path}`;
}

/** `url` with `query` placed first in its query string (before a fragment). */
function withQuery(url: string, query: string): string {
  if (query === '') return url;
  const h = url.indexOf('#');
  const [head, fragment] = h === -1 ? [url, ''] : [url.slice(0, h), url.slice(h)];
  const q = head.indexOf('?');
  if (q === -1) return `${head}?${query}${fragment}`;
  const rest = head.slice(q + 1);
  return `${head.slice(0, q)}?${query}${rest === '' ? '' : `&${rest}`}${fragment}`;
}
