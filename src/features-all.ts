/**
 * The optional features (see features.ts), one value each, for `new PoolCore(options,
 * [rateLimits, hedging])`; `Pool` is built with all of them. Each value is a pure object:
 * a bundler keeps only the ones a program uses, and with them only their modules.
 */
import { Hedging } from './call/hedging.js';
import { feature, tableOf } from './features.js';
import { probeEndpoints } from './health/probe.js';
import { budgetOptions } from './limits/budget.js';
import { Quota, limitsOptions, resolveRateLimit } from './limits/quota.js';
import { capacity } from './limits/capacity.js';
import { WaitQueue } from './limits/waiters.js';
import { groupEndpoints } from './limits/groups.js';
import { learnCeiling, ownLevel, recoverCeilings } from './call/ceilings.js';
import { adaptDown, adaptUp } from './call/adaptive.js';
import { hedgeOptions, resolveHedgeFeature } from './selection/hedge.js';
import { LatencyTracker, latencyOptions } from './selection/latency.js';
import { LatencySelector } from './selection/latency-selector.js';
import { healthSelector, resolveHealth } from './selection/health.js';
import { randomSelector } from './selection/random.js';
import { PanicMode, resolveMaxEjected } from './selection/panic.js';
import { resolveFailureRate } from './health/failure-rate.js';
import { authOptions, reauthenticate } from './call/auth.js';
import { admissionTimedOut, askStore } from './call/admission.js';
import { Fleet } from './limits/fleet.js';
import { PermitQueue, permitOptions } from './call/permit-queue.js';
import { avoidedBy, excludedOf, pinnedOf, pinnedOut, selectAvoiding, selectPinned } from './call/routing.js';
import { storeOptions } from './limits/store.js';
import { acquireSignal } from './base/signals.js';

/** `pool.probeHealth`. */
export const healthProbes = /* @__PURE__ */ feature({ probe: { run: probeEndpoints } });

/** The pool's `retryBudget`. */
export const retryBudgets = /* @__PURE__ */ feature({ budget: { options: budgetOptions } });

/** Endpoints' `rateLimit` (token bucket, paced, daily, adaptive), `groups`, learned ceilings and their recovery, queues for a turn. */
export const rateLimits = /* @__PURE__ */ feature({
  limits: {
    resolve: resolveRateLimit,
    options: limitsOptions,
    quota: (limit, resetUtcHour, now, key, wall) => new Quota(limit, resetUtcHour, now, key, wall),
    group: groupEndpoints,
    waitQueue: (clock) => new WaitQueue(clock),
    learnCeiling,
    ownLevel,
    recoverCeilings,
    capacity,
    adaptDown,
    adaptUp,
  },
});

/** The pool's and a call's `hedge` (a percentile also needs `latencySelection`). */
export const hedging = /* @__PURE__ */ feature({ hedge: { options: hedgeOptions, resolve: resolveHedgeFeature, Hedging } });

/** `strategy: 'latency'`, the pool's `latency`, and the durations a percentile hedge reads. */
export const latencySelection = /* @__PURE__ */ feature({ latency: { options: latencyOptions, Tracker: LatencyTracker, selector: (s) => new LatencySelector(s) } });

/** `strategy: 'health'` and the pool's `health` options. */
export const healthSelection = /* @__PURE__ */ feature({ health: { options: (o) => ({ health: resolveHealth(o['health']) }), selector: healthSelector } });

/** `strategy: 'random'`. */
export const randomSelection = /* @__PURE__ */ feature({ random: { selector: randomSelector } });

/** Panic mode: `maxEjectedPercent`. */
export const panicMode = /* @__PURE__ */ feature({ panic: { options: (o) => ({ maxEjectedPercent: o['maxEjectedPercent'] === undefined ? undefined : resolveMaxEjected(o['maxEjectedPercent']) }), mode: (s, maxEjectedPercent) => new PanicMode(s, maxEjectedPercent) } });

/** The breaker's `failure-rate` mode: `breaker.mode`, `failureRate`, `windowMs`, `minThroughput`. */
export const failureRates = /* @__PURE__ */ feature({ failureRate: { resolve: resolveFailureRate } });

/** `refreshAuth` and `refreshTimeoutMs`. */
export const authRefresh = /* @__PURE__ */ feature({ auth: { options: authOptions, reauthenticate } });

/** `sharedQuota` (with `rateLimits`). */
export const sharedQuotas = /* @__PURE__ */ feature({ store: { options: storeOptions, connect: (s) => new Fleet(s), askStore, admissionTimedOut } });

/** The pool's `maxConcurrentCalls` and `permitScope`: calls queue for a pool-wide permit. */
export const concurrencyLimits = /* @__PURE__ */ feature({ concurrency: { options: permitOptions, Queue: PermitQueue } });

/** A call's `pin`, `exclude` and `avoid`. */
export const callRouting = /* @__PURE__ */ feature({ routing: { excluded: excludedOf, pinned: pinnedOf, select: selectPinned, out: pinnedOut, avoiding: selectAvoiding, avoided: avoidedBy } });

/** Attempt signals reused when nothing can hear them fire. */
export const reusableSignals = /* @__PURE__ */ feature({ signals: { acquire: acquireSignal } });

/** Every feature, as one table. */
export const ALL_FEATURES = /* @__PURE__ */ feature(/* @__PURE__ */ tableOf([healthProbes, retryBudgets, rateLimits, hedging, latencySelection, healthSelection, randomSelection, panicMode, failureRates, authRefresh, sharedQuotas, reusableSignals, concurrencyLimits, callRouting]));
