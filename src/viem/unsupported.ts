/**
 * Which endpoints answered "unsupported" for which method, until when (pool clock), and
 * the answer itself, so it can be rethrown when no endpoint is left.
 */
export class UnsupportedMemory {
  readonly #ttlMs: number;
  readonly #byMethod = new Map<string, Map<string, { until: number; error: unknown }>>();

  constructor(ttlMs: number) {
    this.#ttlMs = ttlMs;
  }

  /** Whether anything is remembered for `method` (cheap: the hot path asks this first). */
  has(method: string): boolean {
    return this.#byMethod.size !== 0 && this.#byMethod.has(method);
  }

  remember(method: string, endpoint: string, error: unknown, now: number): void {
    if (!(this.#ttlMs > 0)) return;
    let m = this.#byMethod.get(method);
    if (m === undefined) this.#byMethod.set(method, (m = new Map()));
    m.set(endpoint, { until: now + this.#ttlMs, error });
  }

  /** The live endpoints to leave out for `method`, or `undefined` when none. */
  excluded(method: string, live: readonly string[], now: number): { names: string[]; all: boolean; error: unknown } | undefined {
    const m = this.#byMethod.get(method);
    if (m === undefined) return undefined;
    const names: string[] = [];
    let error: unknown;
    for (const [endpoint, rec] of m) {
      if (rec.until <= now) m.delete(endpoint);
      else if (live.includes(endpoint)) {
        names.push(endpoint);
        error = rec.error;
      }
    }
    if (m.size === 0) this.#byMethod.delete(method);
    return names.length === 0 ? undefined : { names, all: names.length >= live.length, error };
  }
}
