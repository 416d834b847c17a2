/**
 * `pool.capacity()` for a pool with the rate-limit feature (features.ts `limits`): only that
 * feature gives endpoints a per-second limit, a learned ceiling or an adaptive limit. A pool
 * without it has no limit to add up: its capacity is `Infinity` while an endpoint can take
 * calls (pool-core.ts). A read: it changes nothing (recovery steps are the next success's).
 */
import type { PoolState } from '../state.js';

/**
 * Theoretical calls per second of the endpoints that can take calls now, at the limits in
 * force. A group sharing one quota counts once, at the lower of its shared ceiling and the
 * sum of its members' own; `Infinity` when such an endpoint has no per-second limit.
 */
export function capacity<C>(s: PoolState<C>, now: number): number {
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
