/**
 * Endpoint selection, as a pure function of the endpoints' state, `now`, where each tier's
 * walk starts, and the call's tried and excluded sets. No timers, no side effects: the
 * pool applies the result (takes the token, enters the breaker, advances the cursor).
 *
 * Tiers are walked in priority order (`high`, then `low`). Within a tier the walk follows
 * the tier's ring, starting at `starts[tier]`:
 * - an excluded endpoint, or one that is unavailable (breaker not admitting, disabled,
 *   daily quota spent), is skipped outright;
 * - every other endpoint is *admissible*; one that cannot go right now (cooling down after
 *   a rate-limited answer, no token, no free in-flight slot) is skipped for this call
 *   rather than waited on, and its wait is remembered;
 * - the first ready endpoint the call has not tried wins;
 * - failing that, the first ready endpoint it has tried (the caller backs off first).
 * A lower tier is consulted only when the tier above has no admissible endpoint at all:
 * being over quota is not ill health, so it never spills load past the operator's intent.
 * When a tier has admissible endpoints but none is ready, the answer is to wait for the
 * shortest of their waits, then select again.
 */
import type { EndpointState } from './endpoint.js';
import { DEFAULTS } from '../options/defaults.js';
import type { HealthOptions } from '../options/options.js';
import { finite, optionsObject, type KnownKeys } from '../options/validate.js';

export type Selection<C> =
  /** Go to this endpoint now (`tried`: the call has used it before, so back off first). */
  | { readonly kind: 'endpoint'; readonly endpoint: EndpointState<C>; readonly tried: boolean; readonly panic?: boolean }
  /** Admissible endpoints exist but none is ready: wait `waitMs` (`Infinity`: until an attempt finishes somewhere). */
  | { readonly kind: 'wait'; readonly waitMs: number; readonly endpoint: EndpointState<C> | undefined }
  /** No endpoint is available: `retryAfterMs` until the first may be (`Infinity`: unknown, e.g. a probe is out). */
  | { readonly kind: 'none'; readonly retryAfterMs: number };

export interface SelectionInput<C> {
  /** Rings per tier, highest priority first; an endpoint may appear more than once (its weight). */
  readonly tiers: readonly (readonly EndpointState<C>[])[];
  /** Where each tier's walk starts. */
  readonly starts: readonly number[];
  readonly now: number;
  readonly tried: readonly EndpointState<C>[] | undefined;
  readonly excluded: readonly EndpointState<C>[] | undefined;
  /** Tiers in panic mode: their breakers are ignored (see `tierInPanic`). */
  readonly panic?: readonly boolean[];
}

/**
 * Panic mode: a tier of `n` endpoints may have at most `min(floor(n × maxEjectedPercent /
 * 100), n − 1)` endpoints out because of their breakers. With more out, the tier is in
 * panic: selection ignores its breakers and spreads calls over all of its endpoints,
 * rather than fail every call. Rounding down keeps at least one endpoint of any tier
 * eligible, whatever the percentage.
 */
export function tierInPanic<C>(ring: readonly EndpointState<C>[], now: number, maxEjectedPercent: number): boolean {
  let n = 0;
  let out = 0;
  let last: EndpointState<C> | undefined;
  for (const ep of ring) {
    if (ep === last) continue; // weighted rings repeat an endpoint in a row
    last = ep;
    n++;
    if (!ep.breaker.admits(now)) out++;
  }
  const allowed = Math.min(Math.floor((n * maxEjectedPercent) / 100), n - 1);
  return out > allowed;
}

export function selectEndpoint<C>(input: SelectionInput<C>): Selection<C> {
  const { tiers, starts, now, tried, excluded, panic } = input;
  let retryAfterMs = Infinity;
  for (let t = 0; t < tiers.length; t++) {
    const ring = tiers[t]!;
    const n = ring.length;
    if (n === 0) continue;
    const start = starts[t] ?? 0;
    const panicking = panic?.[t] === true;
    let admissible = false;
    let bestWait = Infinity;
    let waitFor: EndpointState<C> | undefined;
    let fallback: EndpointState<C> | undefined;
    for (let i = 0; i < n; i++) {
      let p = start + i;
      if (p >= n) p -= n;
      const ep = ring[p]!;
      if (excluded !== undefined && excluded.includes(ep)) continue;
      const out = ep.unavailableMs(now, panicking);
      if (out > 0) {
        if (out < retryAfterMs) retryAfterMs = out;
        continue;
      }
      admissible = true;
      const wait = ep.readyInMs(now);
      if (wait > 0) {
        if (wait < bestWait || waitFor === undefined) {
          bestWait = wait;
          waitFor = ep;
        }
        continue;
      }
      if (tried !== undefined && tried.includes(ep)) {
        fallback ??= ep;
        continue;
      }
      return panicking ? { kind: 'endpoint', endpoint: ep, tried: false, panic: true } : ep.pick;
    }
    if (fallback !== undefined) return { kind: 'endpoint', endpoint: fallback, tried: true, panic: panicking };
    if (admissible) return { kind: 'wait', waitMs: bestWait, endpoint: waitFor };
  }
  return { kind: 'none', retryAfterMs };
}

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
    demand += ep.demandPerSecond(now);
    if (ep.failuresIn(now, windowMs) > 0 || ep.unavailableMs(now) > 0 || counted.includes(ep.quota)) continue;
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
  return { ep, failures: ep.failuresIn(now, windowMs), usage: ep.usageIn(now, windowMs), longUsage: ep.usageIn(now, longWindowMs), order };
}

function better<C>(a: Ranked<C>, b: Ranked<C>): boolean {
  if (a.failures !== b.failures) return a.failures < b.failures;
  if (a.usage !== b.usage) return a.usage < b.usage;
  if (a.longUsage !== b.longUsage) return a.longUsage < b.longUsage;
  return a.order < b.order;
}

export interface LatencySelectionInput<C> extends Omit<SelectionInput<C>, 'starts' | 'panic'> {
  readonly random: () => number;
  /** Latency estimate of an endpoint with no history. */
  readonly coldStartMs: number;
}

/**
 * Latency-aware selection: power of two choices over peak-EWMA latency × (in flight + 1).
 * Two candidates the call has not tried, ready now, are drawn at random within the tier
 * and the cheaper one wins: load spreads by latency without the herd behaviour of always
 * picking the fastest. Draws are bounded (eight per tier); when they find nothing ready,
 * or the tier has a single candidate, the walk of `selectEndpoint` from a random start
 * decides (waits, tried endpoints, lower tiers), so the rules stay the same.
 */
export function selectByLatency<C>(input: LatencySelectionInput<C>): Selection<C> {
  const { tiers, now, tried, excluded, random, coldStartMs } = input;
  for (const ring of tiers) {
    const n = ring.length;
    if (n === 0) continue;
    let first: EndpointState<C> | undefined;
    let second: EndpointState<C> | undefined;
    for (let draw = 0; draw < 8 && second === undefined; draw++) {
      const ep = ring[Math.floor(random() * n)]!;
      if (ep === first || (excluded !== undefined && excluded.includes(ep)) || (tried !== undefined && tried.includes(ep))) continue;
      if (ep.unavailableMs(now) > 0 || ep.readyInMs(now) > 0) continue;
      if (first === undefined) first = ep;
      else second = ep;
    }
    if (first !== undefined && second !== undefined) {
      const pick = cost(first, coldStartMs) <= cost(second, coldStartMs) ? first : second;
      return pick.pick;
    }
    // Too few ready candidates found by sampling: let the ordinary walk decide this tier.
    const start = Math.floor(random() * n);
    const walked = selectEndpoint({ tiers: [ring], starts: [start], now, tried, excluded });
    if (walked.kind !== 'none') return walked;
  }
  return selectEndpoint({ tiers, starts: [0, 0], now, tried, excluded });
}

function cost<C>(ep: EndpointState<C>, coldStartMs: number): number {
  return (ep.latency?.estimate(coldStartMs) ?? coldStartMs) * (ep.inFlight + 1);
}

/**
 * Selection for a call pinned to one endpoint: that endpoint or nothing. Returns why it
 * can never serve this call (a string), or when it can.
 */
export function selectPinned<C>(ep: EndpointState<C>, now: number, tried: readonly EndpointState<C>[] | undefined, excluded: readonly EndpointState<C>[] | undefined): Selection<C> | string {
  if (!ep.live) return 'it was removed from the pool';
  if (excluded?.includes(ep) === true) return 'it answered that it does not support this operation';
  if (ep.disabled) return 'it is disabled';
  const out = ep.unavailableMs(now);
  if (out > 0) return { kind: 'none', retryAfterMs: out };
  const wait = ep.readyInMs(now);
  if (wait > 0) return { kind: 'wait', waitMs: wait, endpoint: ep };
  return { kind: 'endpoint', endpoint: ep, tried: tried?.includes(ep) === true };
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
