import { PoolError } from '../base/errors.js';

/**
 * Methods remembered at most: past it, the one remembered first is forgotten (its endpoints
 * are asked once more). A transport that forwards its callers' requests (a proxy) met any
 * number of made-up methods, each answered "method not found" and each kept for the whole
 * `rememberUnsupportedMs` (or, never asked again, for good): about 5 KB each.
 */
export const MAX_REMEMBERED_METHODS = 256;

/**
 * Which endpoints answered "unsupported" for which method, until when (pool clock), and
 * the answer itself, so it can be rethrown when no endpoint is left. An answer that says
 * nothing of the method (HTTP 401/403: a key or an origin refused, which may pass; 402, 404, 410) is
 * remembered `soft`: it leaves its endpoint out while another may serve, never all of them.
 * What an endpoint answered is forgotten once `setEndpoints` gives its name another connection.
 */
export class UnsupportedMemory {
  readonly #ttlMs: number;
  readonly #byMethod = new Map<string, Map<string, { until: number; error: unknown; soft: boolean }>>();
  readonly #replaced: (() => readonly string[] | undefined) | undefined;
  /** When the records past their time are next swept out (those of a method nobody asks again included). */
  #sweepAt = 0;

  /** `replaced`: what `connectionWatch(pool)` returns. */
  constructor(ttlMs: number, replaced?: () => readonly string[] | undefined) {
    this.#ttlMs = ttlMs;
    this.#replaced = replaced;
  }

  /** Whether anything is remembered for `method` (cheap: the hot path asks this first). */
  has(method: string): boolean {
    return this.#byMethod.size !== 0 && this.#byMethod.has(method);
  }

  remember(method: string, endpoint: string, error: unknown, now: number, soft = false): void {
    if (!(this.#ttlMs > 0)) return;
    // The set's changes first, as in `excluded`: an answer recorded for a name added since the
    // last look would otherwise stay when the name is given another node before the next one.
    this.#sync();
    let m = this.#byMethod.get(method);
    if (m === undefined) {
      if (now >= this.#sweepAt) this.#sweep(now);
      if (this.#byMethod.size >= MAX_REMEMBERED_METHODS) this.#byMethod.delete(this.#byMethod.keys().next().value as string);
      this.#byMethod.set(method, (m = new Map()));
    }
    m.set(endpoint, { until: now + this.#ttlMs, error, soft });
  }

  /** Drops every record past its time; the next sweep comes a `rememberUnsupportedMs` later (a minute at most). */
  #sweep(now: number): void {
    this.#sweepAt = now + Math.min(this.#ttlMs, 60_000);
    for (const [method, m] of this.#byMethod) {
      for (const [endpoint, rec] of m) if (rec.until <= now) m.delete(endpoint);
      if (m.size === 0) this.#byMethod.delete(method);
    }
  }

  /** How many methods have something remembered (for tests). */
  get size(): number {
    return this.#byMethod.size;
  }

  /** The live endpoints to leave out for `method`, or `undefined` when none. */
  excluded(method: string, live: readonly string[], now: number): { names: string[]; all: boolean; error: unknown } | undefined {
    this.#sync();
    const m = this.#byMethod.get(method);
    if (m === undefined) return undefined;
    const names: string[] = [];
    const hard: string[] = [];
    let error: unknown;
    let hardError: unknown;
    // A record per endpoint looked up in the list of live ones was records × endpoints a request:
    // 13 ms at 3,000 endpoints, where one node serves a method the others refuse.
    const liveSet = m.size * live.length > 64 ? new Set(live) : undefined;
    for (const [endpoint, rec] of m) {
      if (rec.until <= now) m.delete(endpoint);
      else if (liveSet !== undefined ? liveSet.has(endpoint) : live.includes(endpoint)) {
        names.push(endpoint);
        error = rec.error;
        if (!rec.soft) {
          hard.push(endpoint);
          hardError = rec.error;
        }
      }
    }
    if (m.size === 0) this.#byMethod.delete(method);
    if (names.length === 0) return undefined;
    if (names.length < live.length) return { names, all: false, error };
    // Every endpoint is remembered: those remembered soft are asked again.
    return hard.length === 0 ? undefined : { names: hard, all: hard.length >= live.length, error: hardError };
  }

  /** Forgets what the names `setEndpoints` gave other nodes (or removed) since the last look answered. */
  #sync(): void {
    const replaced = this.#replaced?.();
    if (replaced === undefined) return;
    for (const [key, byEndpoint] of this.#byMethod) {
      for (const name of replaced) byEndpoint.delete(name);
      if (byEndpoint.size === 0) this.#byMethod.delete(key);
    }
  }
}

/**
 * `eth_subscribe` and `eth_unsubscribe` through the pool: refused, nothing sent. A
 * subscription's notifications reach only the socket that made it, which the pool never
 * hands out (viem's socket client drops them): a subscription id from the pool would never
 * fire. viem's `watch*` functions poll through the pool (its type is not `webSocket`).
 */
export function noSubscriptions(method: string): PoolError {
  return new PoolError('INVALID_OPTIONS', `poolTransport: ${method} is not sent through the pool: a subscription's notifications reach only the socket that made it; subscribe with viem's webSocket transport itself (or let viem's watch functions poll through the pool)`, { field: 'method' });
}
