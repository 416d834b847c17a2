/**
 * `strategy: 'random'` (the random feature, see features.ts): every selection starts each
 * tier's walk at a random place in its ring, so the ring's weights make it a weighted pick;
 * the walk and its rules are selector.ts's. A pool built without the feature refuses it.
 */
import type { RandomSource } from '../base/clock.js';
import type { EndpointState } from './endpoint.js';
import { selectEndpoint, type Selector } from './selector.js';

/** The pool's selector for `strategy: 'random'`, made by the pool only for that strategy. */
export function randomSelector<C>(s: { readonly tiers: readonly (readonly EndpointState<C>[])[]; readonly random: RandomSource }): Selector<C> {
  return {
    select(now, tried, excluded) {
      // A fresh start per tier for every selection.
      const tiers = s.tiers;
      const starts = [randomIndex(s.random, tiers[0]!.length), randomIndex(s.random, tiers[1]!.length)];
      return selectEndpoint({ tiers, starts, now, tried, excluded });
    },
  };
}

/** An index in [0, n), robust to a random source that returns 1 or garbage. */
function randomIndex(random: RandomSource, n: number): number {
  if (n <= 1) return 0;
  const i = Math.floor(random() * n);
  return i >= 0 && i < n ? i : 0;
}
