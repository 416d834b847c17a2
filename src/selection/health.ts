/**
 * `strategy: 'health'` (the health feature, see features.ts): within a tier, the endpoint
 * with the fewest recent failures goes first, then the least used; the pool's `health`
 * options tune it. A pool built without the feature refuses both; the core's own strategies
 * (`ordered`, `round-robin`) are in selector.ts, whose walk and rules this one keeps.
 */
import type { EndpointState } from './endpoint.js';
import type { Selection, SelectionInput, Selector } from './selector.js';
import { isExcluded, isTried, markLists } from './marks.js';
import { DEFAULTS } from '../options/defaults.js';
import type { HealthOptions } from '../options/options.js';
import { finite, optionsObject, type KnownKeys } from '../options/validate.js';
import { invalidOption } from '../base/errors.js';

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
 * `selectEndpoint`. Cost is linear in the tier's size: every endpoint is ranked on every
 * selection, so each reads only what its comparison needs (most lose on failures or on
 * use in the window), from counters that cache their sums (bench/paths/tier-size.mjs: 35-40 ns
 * per endpoint on Node 20, a fifth of what reading every figure into an object cost).
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
  const { tiers, now, tried, excluded, maxWaitForHealthyMs } = input;
  const m = markLists(tried, excluded);
  const by: Ranking = { now, windowMs: input.windowMs, longWindowMs: input.longWindowMs };
  let retryAfterMs = Infinity;
  for (const ring of tiers) {
    let admissible = false;
    // Candidates by their index in the ring (-1: none yet); the ranking reads each
    // endpoint's counters only where two candidates are compared (see `better`).
    let soonestWait = Infinity;
    let soonest = -1;
    let ready = -1;
    let readyF = 0;
    let readyU = -1;
    let readyL = -1;
    let readyTried = -1;
    /** The soonest untried endpoint that is not ready now, and the soonest healthy one. */
    let pendingWait = Infinity;
    let pending = -1;
    let healthyWait = Infinity;
    let healthy = -1;
    for (let i = 0; i < ring.length; i++) {
      const ep = ring[i]!;
      if (isExcluded(ep, m, excluded)) continue;
      const out = ep.unavailableMs(now);
      if (out > 0) {
        if (out < retryAfterMs) retryAfterMs = out;
        continue;
      }
      admissible = true;
      const wait = ep.etaMs(now);
      const wasTried = isTried(ep, m, tried);
      if (wait > 0) {
        if (soonest < 0 || wait < soonestWait || (wait === soonestWait && better(by, ring, i, soonest))) {
          soonestWait = wait;
          soonest = i;
        }
        if (wasTried || wait > maxWaitForHealthyMs) continue;
        if (pending < 0 || wait < pendingWait || (wait === pendingWait && better(by, ring, i, pending))) {
          pendingWait = wait;
          pending = i;
        }
        if (failuresOf(by, ep) === 0 && (healthy < 0 || wait < healthyWait || (wait === healthyWait && better(by, ring, i, healthy)))) {
          healthyWait = wait;
          healthy = i;
        }
        continue;
      }
      if (wasTried) {
        if (readyTried < 0 || better(by, ring, i, readyTried)) readyTried = i;
        continue;
      }
      // The common case, an endpoint ready now, ranked against the best so far with its
      // figures kept here (-1: not read yet): most endpoints lose on failures or on use
      // in the window, and an endpoint later in the ring wins no tie.
      const f = failuresOf(by, ep);
      if (ready < 0 || f < readyF) {
        ready = i;
        readyF = f;
        readyU = readyL = -1;
        continue;
      }
      if (f > readyF) continue;
      if (readyU < 0) readyU = ring[ready]!.usage.sum(now, by.windowMs);
      const u = ep.usage.sum(now, by.windowMs);
      if (u > readyU) continue;
      if (u < readyU) {
        ready = i;
        readyU = u;
        readyL = -1;
        continue;
      }
      if (readyL < 0) readyL = ring[ready]!.usage.sum(now, by.longWindowMs);
      const l = ep.usage.sum(now, by.longWindowMs);
      if (l < readyL) {
        ready = i;
        readyL = l;
      }
    }
    if (ready >= 0) {
      if (healthy >= 0 && readyF > 0 && healthyCoverDemand(ring, now, by.windowMs)) {
        return { kind: 'wait', waitMs: healthyWait, endpoint: ring[healthy] };
      }
      return ring[ready]!.pick;
    }
    if (pending >= 0) return { kind: 'wait', waitMs: pendingWait, endpoint: ring[pending] };
    if (readyTried >= 0) return { kind: 'endpoint', endpoint: ring[readyTried]!, tried: true };
    if (admissible) return { kind: 'wait', waitMs: soonestWait, endpoint: soonest < 0 ? undefined : ring[soonest] };
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
  const counted = new Set<unknown>();
  for (const ep of ring) {
    if (counted.has(ep)) continue;
    counted.add(ep);
    demand += ep.usage.rate(now, 2); // attempts per second over the last minute or two
    if (ep.recentFailures.sum(now, windowMs) > 0 || ep.unavailableMs(now) > 0 || counted.has(ep.quota)) continue;
    counted.add(ep.quota);
    const ceiling = ep.quota.perSecond;
    capacity += ceiling === undefined ? Infinity : ceiling;
  }
  return capacity >= demand;
}

/** What the ranking reads the endpoints' counters at. */
interface Ranking {
  readonly now: number;
  readonly windowMs: number;
  readonly longWindowMs: number;
}

function failuresOf<C>(by: Ranking, ep: EndpointState<C>): number {
  return ep.recentFailures.sum(by.now, by.windowMs);
}

/**
 * Whether `ring[i]` ranks before `ring[j]`: fewer failures in the window, then less use in
 * the window, then in the long window, then configuration order. The counters cache their
 * sums (limits/window.ts), so asking again for an endpoint already compared is cheap.
 */
function better<C>(by: Ranking, ring: readonly EndpointState<C>[], i: number, j: number): boolean {
  const a = ring[i]!;
  const b = ring[j]!;
  const fa = failuresOf(by, a);
  const fb = failuresOf(by, b);
  if (fa !== fb) return fa < fb;
  const ua = a.usage.sum(by.now, by.windowMs);
  const ub = b.usage.sum(by.now, by.windowMs);
  if (ua !== ub) return ua < ub;
  const la = a.usage.sum(by.now, by.longWindowMs);
  const lb = b.usage.sum(by.now, by.longWindowMs);
  if (la !== lb) return la < lb;
  return i < j;
}

export interface ResolvedHealth {
  readonly windowMs: number;
  readonly longWindowMs: number;
  readonly maxWaitForHealthyMs: number;
}

const HEALTH_KEYS: Record<keyof HealthOptions, true> & KnownKeys = { windowMs: true, longWindowMs: true, maxWaitForHealthyMs: true };

/** A window of the endpoints' per-minute counters (15 minutes): a longer one would be cut short without a word. */
function healthWindow(field: string, value: unknown, fallback: number): number {
  const ms = finite(field, value, fallback, 0, true);
  if (ms > 900_000) throw invalidOption(field, 'at most 900000 (15 minutes)', value);
  return ms;
}

/** Checks `health` (tuning of `strategy: 'health'`). */
export function resolveHealth(value: unknown): ResolvedHealth {
  const o = optionsObject('health', value, HEALTH_KEYS) ?? {};
  const d = DEFAULTS.health;
  return {
    windowMs: healthWindow('health.windowMs', o['windowMs'], d.windowMs),
    longWindowMs: healthWindow('health.longWindowMs', o['longWindowMs'], d.longWindowMs),
    maxWaitForHealthyMs: finite('health.maxWaitForHealthyMs', o['maxWaitForHealthyMs'], d.maxWaitForHealthyMs),
  };
}

/** The pool's selector for `strategy: 'health'`, made by the pool only for that strategy. */
export function healthSelector<C>(s: { readonly tiers: readonly (readonly EndpointState<C>[])[]; readonly opts: { readonly health: ResolvedHealth | undefined } }): Selector<C> {
  return { select: (now, tried, excluded) => selectHealthiest({ tiers: s.tiers, now, tried, excluded, ...s.opts.health! }) };
}
