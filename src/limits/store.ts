/**
 * A shared limiter store: quotas counted across processes.
 *
 * Upstream providers count a key's rate limit per key, not per caller, so two services (or
 * twenty serverless instances) on the same keys add up on each one, and each process's own
 * limiter is blind to the others. With a `limiterStore`, the pool asks the store to admit
 * every attempt on an endpoint that has a `rateLimit` (one store key per endpoint, or per
 * group), after its own local checks.
 *
 * The store is a dependency that can fail like any other: each `acquire` has its own
 * timeout (`store.timeoutMs`). When the store is slow or down the pool degrades to local
 * limits at `store.degradedShare` of each quota, emits `store-degraded`, tries the store
 * again after `store.retryAfterMs`, and emits `store-recovered` when it answers again. A
 * call is never blocked on the store for longer than its timeout.
 *
 * `endpoint-pool/redis` implements this interface on Redis; the in-process default is
 * simply no store.
 */
import { invalidOption } from '../base/errors.js';
import { DEFAULTS } from '../options/defaults.js';
import { finite, optionsObject, type KnownKeys } from '../options/validate.js';
import { needFeature, type FeatureOptions } from '../features.js';

/** One quota as the store sees it. */
export interface SharedLimit {
  /** The store key: `endpoint:<name>` or `group:<a>+<b>+…`. Never a secret. */
  readonly key: string;
  readonly perSecond: number | undefined;
  readonly burst: number | undefined;
  readonly mode: 'bucket' | 'paced';
  readonly marginMs: number;
  readonly perDay: number | undefined;
  readonly dailyStopFraction: number;
  readonly dailyResetUtcHour: number;
}

/**
 * What one process learned about a quota, for the others: a ceiling the server announced,
 * the day's quota spent (parked for `forMs`), or an endpoint disabled (an invalid key) or
 * enabled again.
 */
export type SharedChange =
  | { readonly type: 'ceiling'; readonly perSecond: number }
  | { readonly type: 'parked'; readonly forMs: number }
  | { readonly type: 'disabled'; readonly endpoint: string }
  | { readonly type: 'enabled'; readonly endpoint: string };

/** The fleet's current knowledge about one quota (remaining times measured on the store's clock). */
export interface SharedState {
  /** A learned ceiling, replacing the configured one. */
  readonly ceilingPerSecond: number | undefined;
  /** How long the quota stays parked (day's quota spent); 0 when it is not. */
  readonly parkedForMs: number;
  /** Endpoints of the quota disabled by some process, each with how long the mark holds. */
  readonly disabled: ReadonlyMap<string, number>;
  /**
   * Endpoints of the quota parked by some process (a key of a group whose own day is spent,
   * see `parkEndpoint`), each with how long until the daily reset frees it. Absent from a
   * store without `parkEndpoint`.
   */
  readonly parkedEndpoints?: ReadonlyMap<string, number>;
}

export interface LimiterStore {
  /**
   * Admits one call under `limit` if the fleet-wide quota allows it now, counting it;
   * otherwise counts nothing. Resolves to 0 when admitted, else to the milliseconds until
   * a call could be admitted.
   *
   * A store may reserve a later slot for a refused call: it then resolves to the wait until
   * that slot starts and admits the next `acquire` on the same key made from then on (for a
   * short grace), without asking the fleet again. A caller that waits out a refusal and asks
   * again gets the reservation either way.
   */
  acquire(limit: SharedLimit): Promise<number>;
  /**
   * Optional: how long after the store fails the pool holds calls on each quota before
   * going on at `degradedShare` locally. Calls the store admitted or reserved before it
   * failed may still be leaving from other processes for about that long; local calls made
   * meanwhile would add up with them in one second. A store that reserves slots ahead
   * declares its horizon plus a second here. @default 0
   */
  readonly degradedHoldMs?: number;
  /**
   * Optional: shares what a classification taught this process about `limit` (a learned
   * ceiling, a parked quota, a disabled or re-enabled endpoint) with every process on the
   * store. The pool calls it after applying the change locally; it must not reject.
   */
  report?(limit: SharedLimit, change: SharedChange): Promise<void>;
  /**
   * Optional: parks one endpoint of `limit` for every process on the store, for `forMs`
   * (until the next daily reset, as the reporting process reads its wall clock). The pool
   * calls it when a key of a group says its own day is spent: the group's quota stays open
   * to the other keys, so a `parked` change (which parks the whole quota) would be wrong.
   * The store hands the mark back in `SharedState.parkedEndpoints` and forgets it once
   * `forMs` has passed. Without it, such a park stays in the process that learned it (the
   * others find out by asking the key). It must not reject.
   */
  parkEndpoint?(limit: SharedLimit, endpoint: string, forMs: number): Promise<void>;
  /**
   * Optional: calls `listener` with a quota's shared state whenever the store learns that it
   * changed (a store returns it with admission answers, so every process hears of a change
   * on its next admission on that quota). Returns the unsubscribe function. The pool
   * subscribes once, applies the state to the quotas whose `key` matches, and unsubscribes
   * on `close()`.
   */
  subscribe?(listener: (key: string, state: SharedState) => void): () => void;
}

export interface StoreOptions {
  readonly store: LimiterStore;
  /** Longest a call waits for the store before going ahead on local limits. @default 50 */
  readonly timeoutMs?: number;
  /** Share of each quota a process allows itself while the store is unavailable. @default 0.5 */
  readonly degradedShare?: number;
  /** How long after a store failure the pool tries it again. @default 5000 */
  readonly retryAfterMs?: number;
}

export interface ResolvedStore {
  readonly store: LimiterStore;
  readonly timeoutMs: number;
  readonly degradedShare: number;
  readonly retryAfterMs: number;
}

const STORE_KEYS: Record<keyof StoreOptions, true> & KnownKeys = { store: true, timeoutMs: true, degradedShare: true, retryAfterMs: true };

/** Checks `sharedQuota`. */
export function resolveStore(value: unknown): ResolvedStore | undefined {
  const o = optionsObject('sharedQuota', value, STORE_KEYS);
  if (o === undefined) return undefined;
  const store = o['store'] as { acquire?: unknown } | undefined;
  if (typeof store !== 'object' || store === null || typeof store.acquire !== 'function') {
    throw invalidOption('sharedQuota.store', 'a LimiterStore ({ acquire(limit) })', store);
  }
  const degradedShare = finite('sharedQuota.degradedShare', o['degradedShare'], DEFAULTS.sharedQuota.degradedShare, 0, true);
  if (degradedShare > 1) throw invalidOption('sharedQuota.degradedShare', 'a fraction in (0, 1]', degradedShare);
  return {
    store: store as LimiterStore,
    timeoutMs: finite('sharedQuota.timeoutMs', o['timeoutMs'], DEFAULTS.sharedQuota.timeoutMs, 0, true),
    degradedShare,
    retryAfterMs: finite('sharedQuota.retryAfterMs', o['retryAfterMs'], DEFAULTS.sharedQuota.retryAfterMs),
  };
}

/** The pool's `sharedQuota` (the feature's options, features.ts): the store counts endpoints' rate limits, so it needs that feature too. */
export const storeOptions: FeatureOptions = (o, features) => {
  const sharedQuota = resolveStore(o['sharedQuota']);
  if (sharedQuota !== undefined && features.limits === undefined) throw needFeature('sharedQuota', 'limits');
  return { sharedQuota };
};
