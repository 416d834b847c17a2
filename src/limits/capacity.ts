/**
 * `pool.capacity()` and the recovery `stats()` applies first, for a pool with the rate-limit
 * feature (features.ts `limits`): only that feature gives endpoints a per-second limit, a
 * learned ceiling or an adaptive limit. A pool without it has no limit to add up: its
 * capacity is `Infinity` while an endpoint can take calls (pool-core.ts).
 */
import type { PoolState } from '../state.js';
import { recoverCeilings } from '../call/ceilings.js';
import { adaptUp } from '../call/adaptive.js';

/** Applies the recovery steps of learned ceilings, and the increases of adaptive limits, that are due. */
export function recoverLimits<C>(s: PoolState<C>, now: number): void {
  for (const ep of s.endpoints) {
    if (ep.quota.learned !== undefined || ep.own !== undefined) recoverCeilings(s, ep, now);
    if (ep.quota.adaptive !== undefined) adaptUp(s, ep, now, false);
  }
}

/**
 * Theoretical calls per second of the endpoints that can take calls now, recovery steps due
 * applied first. A group sharing one quota counts once, at the lower of its shared ceiling
 * and the sum of its members' own; `Infinity` when such an endpoint has no per-second limit.
 */
export function capacity<C>(s: PoolState<C>, now: number): number {
  recoverLimits(s, now);
  const members = new Map<unknown, number>();
  const shared = new Map<unknown, number>();
  for (const ep of s.endpoints) {
    if (ep.unavailableMs(now) > 0) continue;
    const ceiling = ep.quota.perSecond;
    if (ceiling === undefined) return Infinity;
    shared.set(ep.quota, ceiling);
    members.set(ep.quota, (members.get(ep.quota) ?? 0) + (ep.own?.perSecond ?? Infinity));
  }
  let total = 0;
  for (const [quota, ceiling] of shared) total += Math.min(ceiling, members.get(quota)!);
  return total;
}
