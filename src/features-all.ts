/** Every optional feature (see features.ts): what `Pool` is built with. */
import { Hedging } from './call/hedging.js';
import { feature } from './features.js';
import { probeEndpoints } from './health/probe.js';
import { resolveBudget } from './limits/budget.js';
import { resolveHedgeFeature } from './selection/hedge.js';
import { LatencyTracker, resolveLatency } from './selection/latency.js';
import { LatencySelector } from './selection/latency-selector.js';

export const ALL_FEATURES = feature({
  probe: { run: probeEndpoints },
  budget: { resolve: resolveBudget },
  hedge: { resolve: resolveHedgeFeature, Hedging },
  latency: { resolve: resolveLatency, Tracker: LatencyTracker, Selector: LatencySelector },
});
