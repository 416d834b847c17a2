/**
 * Endpoint selection, as a pure function of the endpoints' state, `now`, where each tier's
 * walk starts, and the call's tried and excluded sets. No timers, no side effects but the
 * stamps a long tried or excluded list leaves on its endpoints (marks.ts, read by nothing
 * after the selection): the pool applies the result (takes the token, enters the breaker,
 * advances the cursor).
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
import { isExcluded, isTried, markLists } from './marks.js';

export type Selection<C> =
  /** Go to this endpoint now (`tried`: the call has used it before, so back off first). */
  | { readonly kind: 'endpoint'; readonly endpoint: EndpointState<C>; readonly tried: boolean; readonly panic?: boolean }
  /** Admissible endpoints exist but none is ready: wait `waitMs` (`Infinity`: until an attempt finishes somewhere). */
  | { readonly kind: 'wait'; readonly waitMs: number; readonly endpoint: EndpointState<C> | undefined }
  /** No endpoint is available: `retryAfterMs` until the first may be (`Infinity`: unknown, e.g. a probe is out). */
  | { readonly kind: 'none'; readonly retryAfterMs: number };

/** A strategy's selector, made by its feature for one pool (`strategy: 'latency'`, `'health'`, `'random'`): one selection for a call. */
export interface Selector<C> {
  select(now: number, tried: EndpointState<C>[] | undefined, excluded: EndpointState<C>[] | undefined): Selection<C>;
}

export interface SelectionInput<C> {
  /** Rings per tier, highest priority first; an endpoint may appear more than once (its weight). */
  readonly tiers: readonly (readonly EndpointState<C>[])[];
  /** Where each tier's walk starts. */
  readonly starts: readonly number[];
  readonly now: number;
  readonly tried: readonly EndpointState<C>[] | undefined;
  readonly excluded: readonly EndpointState<C>[] | undefined;
  /** Tiers in panic mode: their breakers are ignored (see panic.ts). */
  readonly panic?: readonly boolean[];
}

export function selectEndpoint<C>(input: SelectionInput<C>): Selection<C> {
  const { tiers, starts, now, tried, excluded, panic } = input;
  const m = markLists(tried, excluded);
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
      if (isExcluded(ep, m, excluded)) continue;
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
      if (isTried(ep, m, tried)) {
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
  let m = markLists(tried, excluded);
  for (const ring of tiers) {
    const n = ring.length;
    if (n === 0) continue;
    let first: EndpointState<C> | undefined;
    let second: EndpointState<C> | undefined;
    for (let draw = 0; draw < 8 && second === undefined; draw++) {
      const ep = ring[Math.floor(random() * n)]!;
      if (ep === first || isExcluded(ep, m, excluded) || isTried(ep, m, tried)) continue;
      if (ep.unavailableMs(now) > 0 || ep.readyInMs(now) > 0) continue;
      if (first === undefined) first = ep;
      else second = ep;
    }
    if (first !== undefined && second !== undefined) {
      const pick = cost(first, coldStartMs, now) <= cost(second, coldStartMs, now) ? first : second;
      return pick.pick;
    }
    // Too few ready candidates found by sampling: let the ordinary walk decide this tier.
    const start = Math.floor(random() * n);
    const walked = selectEndpoint({ tiers: [ring], starts: [start], now, tried, excluded });
    if (walked.kind !== 'none') return walked;
    // That walk marked the lists with stamps of its own.
    m = markLists(tried, excluded);
  }
  return selectEndpoint({ tiers, starts: [0, 0], now, tried, excluded });
}

function cost<C>(ep: EndpointState<C>, coldStartMs: number, now: number): number {
  return (ep.latency?.estimate(coldStartMs, now) ?? coldStartMs) * (ep.inFlight + 1);
}
