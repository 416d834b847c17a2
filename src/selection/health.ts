/**
 * `strategy: 'health'` (the health feature, see features.ts): within a tier, the endpoint
 * with the fewest recent failures goes first, then the least used; the pool's `health`
 * options tune it. A pool built without the feature refuses both; the core's own strategies
 * (`ordered`, `round-robin`) are in selector.ts, whose walk and rules this one keeps.
 */
import type { EndpointState } from './endpoint.js';
import type { Selection, SelectionInput, Selector } from './selector.js';
import { DEFAULTS } from '../options/defaults.js';
import type { HealthOptions } from '../options/options.js';
import { finite, optionsObject, type KnownKeys } from '../options/validate.js';

export interface HealthSelectionInput<C> extends Omit<SelectionInput<C>, 'starts'> {
  /** The window failures and usage are counted over. */
  readonly windowMs: number;
  /** The longer window that breaks ties on usage. */
  readonly longWindowMs: number;
  /** How long a call may wait for a healthier endpoint rather than use a less healthy one now. */
  readonly maxWaitForHealthyMs: number;
}

/**
 * Health-weighted selection: within a tier, the endpoint with the fewest failures in the
 * window wins, then the least used (window, then long window), then configuration order.
 * An endpoint that keeps failing sinks to the end of the ranking: it becomes overflow,
 * used when the healthy ones cannot serve. Tiers and the tried/excluded rules are as in
 * `selectEndpoint`. Cost is linear in the tier's size.
 *
 * Waiting, precisely:
 * - When an untried endpoint is ready now, the best-ranked one goes, with one exception
 *   (the "wait a little for a healthy key" rule): when that endpoint has failed in the
 *   window, some healthy untried endpoint (no failure in the window) will be ready within
 *   `maxWaitForHealthyMs`, and the healthy endpoints' combined ceilings cover the tier's
 *   recent demand, the call waits for the *soonest* such healthy endpoint instead.
 * - When no untried endpoint is ready now but one will be within `maxWaitForHealthyMs`,
 *   the call waits for the soonest untried one rather than retry a tried one at once.
 * - Otherwise a ready tried endpoint goes (after the call's backoff).
 * - Otherwise the call waits for the soonest admissible endpoint, whatever its rank (ties
 *   go to the better rank): ranking decides among endpoints that can serve, never how long
 *   a call waits.
 * Waits are `etaMs`: the time until the endpoint could serve this call given the calls
 * already queued on its quota.
 */
export function selectHealthiest<C>(input: HealthSelectionInput<C>): Selection<C> {
  const { tiers, now, tried, excluded, windowMs, longWindowMs, maxWaitForHealthyMs } = input;
  let retryAfterMs = Infinity;
  for (const ring of tiers) {
    let admissible = false;
    let soonestWait = Infinity;
    let soonest: Ranked<C> | undefined;
    let ready: Ranked<C> | undefined;
    let readyTried: Ranked<C> | undefined;
    /** The soonest untried endpoint that is not ready now, and the soonest healthy one. */
    let pendingWait = Infinity;
    let pending: Ranked<C> | undefined;
    let healthyWait = Infinity;
    let healthy: Ranked<C> | undefined;
    for (let i = 0; i < ring.length; i++) {
      const ep = ring[i]!;
      if (excluded !== undefined && excluded.includes(ep)) continue;
      const out = ep.unavailableMs(now);
      if (out > 0) {
        if (out < retryAfterMs) retryAfterMs = out;
        continue;
      }
      admissible = true;
      const wait = ep.etaMs(now);
      const isTried = tried !== undefined && tried.includes(ep);
      const r = rank(ep, now, windowMs, longWindowMs, i);
      if (wait > 0) {
        if (soonest === undefined || wait < soonestWait || (wait === soonestWait && better(r, soonest))) {
          soonestWait = wait;
          soonest = r;
        }
        if (isTried || wait > maxWaitForHealthyMs) continue;
        if (pending === undefined || wait < pendingWait || (wait === pendingWait && better(r, pending))) {
          pendingWait = wait;
          pending = r;
        }
        if (r.failures === 0 && (healthy === undefined || wait < healthyWait || (wait === healthyWait && better(r, healthy)))) {
          healthyWait = wait;
          healthy = r;
        }
        continue;
      }
      if (isTried) {
        if (readyTried === undefined || better(r, readyTried)) readyTried = r;
      } else if (ready === undefined || better(r, ready)) {
        ready = r;
      }
    }
    if (ready !== undefined) {
      if (ready.failures > 0 && healthy !== undefined && healthyCoverDemand(ring, now, windowMs)) {
        return { kind: 'wait', waitMs: healthyWait, endpoint: healthy.ep };
      }
      return ready.ep.pick;
    }
    if (pending !== undefined) return { kind: 'wait', waitMs: pendingWait, endpoint: pending.ep };
    if (readyTried !== undefined) return { kind: 'endpoint', endpoint: readyTried.ep, tried: true };
    if (admissible) return { kind: 'wait', waitMs: soonestWait, endpoint: soonest?.ep };
  }
  return { kind: 'none', retryAfterMs };
}

/**
 * Whether the tier's healthy endpoints (no failure in the window) could carry its recent
 * demand on their own: the sum of their ceilings (a shared quota counted once; an
 * unlimited endpoint covers anything) against the tier's attempts per second.
 */
function healthyCoverDemand<C>(ring: readonly EndpointState<C>[], now: number, windowMs: number): boolean {
  let capacity = 0;
  let demand = 0;
  const counted: unknown[] = [];
  for (const ep of ring) {
    if (counted.includes(ep)) continue;
    counted.push(ep);
    demand += ep.usage.rate(now, 2); // attempts per second over the last minute or two
    if (ep.recentFailures.sum(now, windowMs) > 0 || ep.unavailableMs(now) > 0 || counted.includes(ep.quota)) continue;
    counted.push(ep.quota);
    const ceiling = ep.quota.perSecond;
    capacity += ceiling === undefined ? Infinity : ceiling;
  }
  return capacity >= demand;
}

interface Ranked<C> {
  readonly ep: EndpointState<C>;
  readonly failures: number;
  readonly usage: number;
  readonly longUsage: number;
  readonly order: number;
}

function rank<C>(ep: EndpointState<C>, now: number, windowMs: number, longWindowMs: number, order: number): Ranked<C> {
  return { ep, failures: ep.recentFailures.sum(now, windowMs), usage: ep.usage.sum(now, windowMs), longUsage: ep.usage.sum(now, longWindowMs), order };
}

function better<C>(a: Ranked<C>, b: Ranked<C>): boolean {
  if (a.failures !== b.failures) return a.failures < b.failures;
  if (a.usage !== b.usage) return a.usage < b.usage;
  if (a.longUsage !== b.longUsage) return a.longUsage < b.longUsage;
  return a.order < b.order;
}

export interface ResolvedHealth {
  readonly windowMs: number;
  readonly longWindowMs: number;
  readonly maxWaitForHealthyMs: number;
}

const HEALTH_KEYS: Record<keyof HealthOptions, true> & KnownKeys = { windowMs: true, longWindowMs: true, maxWaitForHealthyMs: true };

/** Checks `health` (tuning of `strategy: 'health'`). */
export function resolveHealth(value: unknown): ResolvedHealth {
  const o = optionsObject('health', value, HEALTH_KEYS) ?? {};
  const d = DEFAULTS.health;
  return {
    windowMs: finite('health.windowMs', o['windowMs'], d.windowMs, 0, true),
    longWindowMs: finite('health.longWindowMs', o['longWindowMs'], d.longWindowMs, 0, true),
    maxWaitForHealthyMs: finite('health.maxWaitForHealthyMs', o['maxWaitForHealthyMs'], d.maxWaitForHealthyMs),
  };
}

/** The pool's selector for `strategy: 'health'`, made by the pool only for that strategy. */
export function healthSelector<C>(s: { readonly tiers: readonly (readonly EndpointState<C>[])[]; readonly opts: { readonly health: ResolvedHealth | undefined } }): Selector<C> {
  return { select: (now, tried, excluded) => selectHealthiest({ tiers: s.tiers, now, tried, excluded, ...s.opts.health! }) };
}
