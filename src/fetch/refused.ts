/**
 * Requests `fetch` refuses before it sends anything: a GET or HEAD with a body, a stream body
 * without `duplex: 'half'`, `redirect: 'bogus'`, a method it forbids (CONNECT, TRACE), and
 * the like. Such a request fails the same way on every endpoint, so the call ends at once
 * with the request's fault (`PERMANENT`, its cause fetch's `TypeError`), and no endpoint's
 * breaker or health hears of it.
 *
 * Told apart by shape, on the failure path only (nothing is checked on a request that
 * succeeds): `fetch` raises a `TypeError` for both a refused request and a network failure,
 * but a network failure's says so. Node's and Deno's carry a `cause` ("fetch failed" in
 * undici, always); a browser's have no cause and fixed words: Chromium's "Failed to fetch",
 * Firefox's "NetworkError when attempting to fetch resource.", Safari's "Load failed" (and,
 * in older versions, "The network connection was lost." and the like). A refused request's
 * `TypeError` has no cause and names what is wrong ("Request with GET/HEAD method cannot have
 * body.", Chromium's "Failed to execute 'fetch' on 'Window': ..."). Anything that does not
 * match stays a network failure, as it was: the doubt goes to failing over.
 */

/** Words of a network failure (any runtime, polyfills included); a refused request's message has none. */
const NETWORK_WORDS = /fetch failed|failed to fetch|networkerror|load failed|network|connection|offline|timed out|could not connect|hostname|error sending request|^cancell?ed$|terminated|socket|refused|unreachable/i;

/** Whether `error`, from `fetch`, refused the request before sending anything (see above). */
export function refusedByFetch(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { name?: unknown; message?: unknown; cause?: unknown; code?: unknown };
  return e.name === 'TypeError' && e.cause === undefined && e.code === undefined && typeof e.message === 'string' && !NETWORK_WORDS.test(e.message);
}

/** The request's fault: `fetch` refused it before sending anything. `cause` is fetch's error. */
export class RequestRefusedError extends Error {
  override readonly name = 'RequestRefusedError';

  constructor(cause: Error) {
    super(`fetch refused the request before sending it (the request's fault: nothing was sent, no endpoint is blamed): ${cause.message}`, { cause });
  }
}

/** `error` as a `RequestRefusedError` when `fetch` refused the request, else as it is. */
export function refusalOf(error: unknown): unknown {
  return refusedByFetch(error) ? new RequestRefusedError(error as Error) : error;
}
