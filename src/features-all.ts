/** Every optional feature (see features.ts): what `Pool` is built with. */
import type { Features } from './features.js';
import { probeEndpoints } from './health/probe.js';
import { resolveBudget } from './limits/budget.js';
import { reauthenticate } from './call/auth.js';

export const ALL_FEATURES: Features = {
  probe: { run: probeEndpoints },
  budget: { resolve: resolveBudget },
  auth: { reauthenticate },
};
