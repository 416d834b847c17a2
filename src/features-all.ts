/** Every optional feature (see features.ts): what `Pool` is built with. */
import { Hedging } from './call/hedging.js';
import { feature } from './features.js';
import { probeEndpoints } from './health/probe.js';
import { resolveBudget } from './limits/budget.js';
import { Quota, keyLevel, resolveRateLimit } from './limits/quota.js';
import { resetHour } from './limits/daily.js';
import { resolveCeilingRecovery } from './limits/ceiling.js';
import { WaitQueue } from './limits/waiters.js';
import { learnCeiling, ownLevel, recoverCeilings } from './call/ceilings.js';
import { adaptDown, adaptUp } from './call/adaptive.js';
import { resolveHedgeFeature } from './selection/hedge.js';
import { LatencyTracker, resolveLatency } from './selection/latency.js';
import { LatencySelector } from './selection/latency-selector.js';
import { reauthenticate } from './call/auth.js';
import { admissionTimedOut, askStore } from './call/admission.js';
import { Fleet } from './limits/fleet.js';
import { resolveStore } from './limits/store.js';

export const ALL_FEATURES = feature({
  probe: { run: probeEndpoints },
  budget: { resolve: resolveBudget },
  limits: {
    resolve: resolveRateLimit,
    resetHour,
    ceilingRecovery: resolveCeilingRecovery,
    quota: (limit, resetUtcHour, now, key, wall) => new Quota(limit, resetUtcHour, now, key, wall),
    keyLevel,
    waitQueue: (clock) => new WaitQueue(clock),
    learnCeiling,
    ownLevel,
    recoverCeilings,
    adaptDown,
    adaptUp,
  },
  hedge: { resolve: resolveHedgeFeature, Hedging },
  latency: { resolve: resolveLatency, Tracker: LatencyTracker, Selector: LatencySelector },
  auth: { reauthenticate },
  store: { resolve: resolveStore, connect: (s) => new Fleet(s), askStore, admissionTimedOut },
});
