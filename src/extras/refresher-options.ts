/** The options and results of `Refresher` (./refresher.ts), and the check of its endpoint lists. */
import { invalidOption } from '../base/errors.js';
import type { EndpointConfig } from '../options/options.js';

export interface RefresherOptions<C> {
  /** The candidates, or a function that fetches them (it gets a signal and `timeoutMs`). */
  readonly candidates: readonly EndpointConfig<C>[] | ((signal: AbortSignal) => Promise<readonly EndpointConfig<C>[]>);
  /** Health check of one candidate: healthy unless it rejects or resolves `false`. */
  readonly check: (conn: C, signal: AbortSignal, candidate: EndpointConfig<C>) => Promise<unknown>;
  /** Installed when fewer than `minHealthy` candidates survive. @default none: keep the current set */
  readonly fallback?: readonly EndpointConfig<C>[];
  /** Appended to every installed set (a paid endpoint kept as `low` priority, say). @default none */
  readonly always?: readonly EndpointConfig<C>[];
  /** Time between the end of one refresh and the start of the next. @default 300000 */
  readonly intervalMs?: number;
  /** Timeout of each check, of the candidate source, and of each wait on the `shared` list. @default 5000 */
  readonly timeoutMs?: number;
  /** Checks in flight at once. @default 8 */
  readonly concurrency?: number;
  /** Fewer survivors than this is a failed refresh. @default 1 */
  readonly minHealthy?: number;
  /** Order of the survivors: as given, or fastest check first. @default 'given' */
  readonly order?: 'given' | 'latency';
  /**
   * Whether a candidate's connection is the one an endpoint of the same name has: then the
   * endpoint keeps its connection object, and with it its breaker, counters and learned limits.
   * @default the same value, or equal as data (strings, URLs by `href`, plain objects and arrays member by member)
   */
  readonly sameConnection?: (held: C, candidate: C) => boolean;
  /** Told about every refresh; whatever it throws is ignored. @default none */
  readonly onRefresh?: (result: RefreshResult) => void;
  /**
   * A survivor list shared by the fleet (`createRedisHealth(client)` from
   * `endpoint-pool/redis`): one process runs the checks and publishes the names that passed,
   * fresh for `intervalMs`; the others install the candidates with those names, and serve
   * the last list while it is re-checked. @default none: every process checks on its own
   */
  readonly shared?: SharedSurvivors;
}

/** What `Refresher` needs from a shared survivor list (`RedisHealth` has it). */
export interface SharedSurvivors {
  /**
   * The fleet's survivor names: a published list, or the result of `check` run here when
   * this process is the one to re-check; `undefined` when there is none yet.
   */
  refreshSurvivors(check: () => Promise<readonly string[]>, options: { readonly ttlMs: number }): Promise<readonly string[] | undefined>;
}

export interface RefreshResult {
  /** Candidates checked. */
  readonly checked: number;
  /** Names that passed, in installed order. */
  readonly healthy: readonly string[];
  /** What was installed (`undefined`: the set was left as it was). */
  readonly installed: readonly string[] | undefined;
  readonly usedFallback: boolean;
  /** Why the refresh failed (the candidate source, or `setEndpoints`), if it did. */
  readonly error?: unknown;
  /**
   * When the candidate source last answered (`undefined`: never). When it fails, the
   * candidates it gave last are checked again, so the set stays verified; this says how
   * old that candidate list is.
   */
  readonly lastGoodAt?: number | undefined;
  /** The survivors came from the fleet's shared list (checked by another process, or by this one for all). */
  readonly fromShared?: boolean;
  readonly startedAt: number;
  readonly durationMs: number;
}

/**
 * Candidates are endpoint configs, not URLs: a list of strings would be checked as
 * connection-less endpoints and every refresh would fail quietly, so say it at once.
 */
export function checkConfigs(field: string, list: unknown): void {
  if (!Array.isArray(list)) throw invalidOption(field, 'an array of endpoint configs { name, conn }', list);
  list.forEach((c: unknown, i) => {
    if (typeof c !== 'object' || c === null || typeof (c as { name?: unknown }).name !== 'string' || !('conn' in c)) {
      const hint = typeof c === 'string' ? " (a URL? wrap it: { name: 'eu', conn: url })" : '';
      throw invalidOption(`${field}[${i}]`, `an endpoint config { name, conn }${hint}`, c);
    }
  });
}
