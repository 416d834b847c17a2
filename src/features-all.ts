/** Every optional feature (see features.ts): what `Pool` is built with. */
import { feature } from './features.js';
import { probeEndpoints } from './health/probe.js';
import { resolveBudget } from './limits/budget.js';

export const ALL_FEATURES = feature({
  probe: { run: probeEndpoints },
  budget: { resolve: resolveBudget },
});
