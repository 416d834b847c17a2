/**
 * The optional features' code, reached by the core only through this table.
 *
 * A bundler follows static imports, not the run-time checks that guard a feature, so a
 * feature the core imported directly would ship in every bundle whatever the options. The
 * core instead asks `PoolState.features` for it: `Pool` (pool.ts) is built with every
 * feature (features-all.ts); a pool built with fewer (`PoolCore` with its own table)
 * bundles without the others' code, and an option that needs a missing feature fails in
 * the constructor with `INVALID_OPTIONS` naming it.
 *
 * Each slot holds what the core calls: a resolver that checks the feature's options, and
 * the functions or classes the call path uses. The types are imported as types only.
 */
import { PoolError } from './base/errors.js';
import type { PoolState } from './state.js';
import type { Operation } from './call/context.js';
import type { ProbeResult } from './health/probe.js';
import type { RetryBudget } from './limits/budget.js';
import type { reauthenticate } from './call/auth.js';
import type { admissionTimedOut, askStore } from './call/admission.js';
import type { Fleet } from './limits/fleet.js';
import type { ResolvedStore } from './limits/store.js';

export interface Features {
  /** `pool.probeHealth`. */
  readonly probe?: { readonly run: <C>(s: PoolState<C>, probe: Operation<C, unknown>, timeoutMs: number) => Promise<ProbeResult[]> };
  /** The pool's `retryBudget`. */
  readonly budget?: { readonly resolve: (value: unknown) => RetryBudget | undefined };
  /**
   * Credential refresh (`refreshAuth`, `refreshTimeoutMs`): what an `unauthorized` answer runs.
   * Without it such an answer ends the call with `UNAUTHORIZED`, as with no `refreshAuth`.
   */
  readonly auth?: { readonly reauthenticate: typeof reauthenticate };
  /** The shared store (`sharedQuota`): its options, the pool's side of it (`PoolState.fleet`) and admission. */
  readonly store?: {
    readonly resolve: (value: unknown) => ResolvedStore | undefined;
    readonly connect: <C>(s: PoolState<C>) => Fleet<C>;
    readonly askStore: typeof askStore;
    readonly admissionTimedOut: typeof admissionTimedOut;
  };
}

/** No optional feature. */
export const NO_FEATURES: Features = {};

/** The error for an option (or method) whose feature the pool was built without. */
export function needFeature(option: string, feature: keyof Features): PoolError {
  return new PoolError('INVALID_OPTIONS', `${option} needs the ${feature} feature, which this pool was built without (Pool from 'endpoint-pool' has every feature)`, { field: option });
}
