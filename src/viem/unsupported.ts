/**
 * Which endpoints answered "unsupported" for which method, until when (pool clock), and
 * the answer itself, so it can be rethrown when no endpoint is left. An answer that says
 * nothing of the method (HTTP 401/403: a key or an origin refused, which may pass) is
 * remembered `soft`: it leaves its endpoint out while another may serve, never all of them.
 * What an endpoint answered is forgotten once `setEndpoints` gives its name another connection.
 */
export class UnsupportedMemory {
  readonly #ttlMs: number;
  readonly #byMethod = new Map<string, Map<string, { until: number; error: unknown; soft: boolean }>>();
  readonly #replaced: (() => readonly string[] | undefined) | undefined;

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
    if (m === undefined) this.#byMethod.set(method, (m = new Map()));
    m.set(endpoint, { until: now + this.#ttlMs, error, soft });
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
    for (const [endpoint, rec] of m) {
      if (rec.until <= now) m.delete(endpoint);
      else if (live.includes(endpoint)) {
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
