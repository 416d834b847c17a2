/**
 * Bearer tokens for the fetch adapter's `getToken`: one per endpoint, fetched lazily and after a
 * `401` through the pool's single-flight `refreshAuth`, each for the base URL it was fetched for.
 */
import { withAuthorization } from './replay.js';

/**
 * Thrown by an attempt that has no token yet for its endpoint: classified `unauthorized`,
 * so the first token is fetched through the same single-flight refresh as a 401's.
 */
export class MissingToken extends Error {
  override readonly name = 'MissingToken';
}

/**
 * Bearer tokens per endpoint, fetched on first use and after a 401 through the pool's refresh, each for
 * its base URL: a name `setEndpoints` gives another URL has none until `getToken` is asked again.
 */
export class TokenCache {
  readonly #get: (endpoint: string, signal: AbortSignal) => Promise<string>;
  /** Each endpoint's `authorization` value (`Bearer <token>`) and the base URL it is for. */
  readonly #tokens = new Map<string, { readonly base: string; readonly value: string }>();
  /** Fetches in flight, by endpoint and base URL. */
  readonly #pending = new Map<string, Promise<string>>();

  constructor(get: (endpoint: string, signal: AbortSignal) => Promise<string>) {
    this.#get = get;
  }

  /** The request's headers with this endpoint's bearer token; throws `MissingToken` before the first one. */
  authorize(endpoint: string, base: string, headers: HeadersInit | undefined): HeadersInit {
    const token = this.#tokens.get(endpoint);
    if (token === undefined || token.base !== base) throw new MissingToken('no token yet for this endpoint');
    return withAuthorization(headers, token.value);
  }

  /** Whether the endpoint has a token for `base` (a request sent now carries it, and is not stopped by `MissingToken`). */
  has(endpoint: string, base: string): boolean {
    return this.#tokens.get(endpoint)?.base === base;
  }

  /** Forgets the tokens of endpoints no longer in the pool (one that comes back asks `getToken` again). */
  keep(names: readonly string[]): void {
    for (const endpoint of this.#tokens.keys()) if (!names.includes(endpoint)) this.#tokens.delete(endpoint);
  }

  /** Replaces the endpoint's token (the pool calls this once per 401 wave). */
  async refresh(endpoint: string, base: string, signal: AbortSignal): Promise<void> {
    this.#tokens.delete(endpoint);
    await this.#fetch(endpoint, base, signal);
  }

  #fetch(endpoint: string, base: string, signal: AbortSignal): Promise<string> {
    const key = `${endpoint}\n${base}`;
    let p = this.#pending.get(key);
    if (p === undefined) {
      p = Promise.resolve(this.#get(endpoint, signal)).then((token) => {
        if (typeof token !== 'string' || token.length === 0) throw new TypeError('getToken must resolve to a non-empty string');
        this.#tokens.set(endpoint, { base, value: `Bearer ${token}` }); // the header's value
        return token;
      });
      const done = (): void => {
        this.#pending.delete(key);
      };
      p.then(done, done);
      this.#pending.set(key, p);
    }
    return p;
  }
}
