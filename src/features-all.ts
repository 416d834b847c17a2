/** Every optional feature (see features.ts): what `Pool` is built with. */
import { feature } from './features.js';
import { probeEndpoints } from './health/probe.js';
import { resolveBudget } from './limits/budget.js';
import { LatencySelector, LatencyTracker, resolveLatency } from './selection/latency.js';

export const ALL_FEATURES = feature({
  probe: { run: probeEndpoints },
  budget: { resolve: resolveBudget },
  latency: { resolve: resolveLatency, Tracker: LatencyTracker, Selector: LatencySelector },
});
