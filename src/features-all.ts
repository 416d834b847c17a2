/** Every optional feature (see features.ts): what `Pool` is built with. */
import type { Features } from './features.js';
import { probeEndpoints } from './health/probe.js';
import { resolveBudget } from './limits/budget.js';
import { reauthenticate } from './call/auth.js';
import { admissionTimedOut, askStore } from './call/admission.js';
import { Fleet } from './limits/fleet.js';
import { resolveStore } from './limits/store.js';

export const ALL_FEATURES: Features = {
  probe: { run: probeEndpoints },
  budget: { resolve: resolveBudget },
  auth: { reauthenticate },
  store: { resolve: resolveStore, connect: (s) => new Fleet(s), askStore, admissionTimedOut },
};
