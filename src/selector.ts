/**
 * Endpoint selection, as a pure function of the endpoints' state, `now`, where each tier's
 * walk starts, and the call's tried and excluded sets. No timers, no side effects: the
 * pool applies the result (takes the token, enters the breaker, advances the cursor).
 *
 * Tiers are walked in priority order (`high`, then `low`). Within a tier the walk follows
 * the tier's ring, starting at `starts[tier]`:
 * - an excluded endpoint, or one whose breaker does not admit, is skipped outright;
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

export type Selection<C> =
  /** Go to this endpoint now (`tried`: the call has used it before, so back off first). */
  | { readonly kind: 'endpoint'; readonly endpoint: EndpointState<C>; readonly tried: boolean }
  /** Admissible endpoints exist but none is ready: wait `waitMs` (`Infinity`: until an attempt finishes somewhere). */
  | { readonly kind: 'wait'; readonly waitMs: number; readonly endpoint: EndpointState<C> | undefined }
  /** No endpoint admits: `retryAfterMs` until the first breaker lets a probe through (`Infinity`: a probe is out). */
  | { readonly kind: 'none'; readonly retryAfterMs: number };

export interface SelectionInput<C> {
  /** Rings per tier, highest priority first; an endpoint may appear more than once (its weight). */
  readonly tiers: readonly (readonly EndpointState<C>[])[];
  /** Where each tier's walk starts. */
  readonly starts: readonly number[];
  readonly now: number;
  readonly tried: readonly EndpointState<C>[] | undefined;
  readonly excluded: readonly EndpointState<C>[] | undefined;
}

export function selectEndpoint<C>(input: SelectionInput<C>): Selection<C> {
  const { tiers, starts, now, tried, excluded } = input;
  let retryAfterMs = Number.POSITIVE_INFINITY;
  for (let t = 0; t < tiers.length; t++) {
    const ring = tiers[t]!;
    const n = ring.length;
    if (n === 0) continue;
    const start = starts[t] ?? 0;
    let admissible = false;
    let bestWait = Number.POSITIVE_INFINITY;
    let waitFor: EndpointState<C> | undefined;
    let fallback: EndpointState<C> | undefined;
    for (let i = 0; i < n; i++) {
      let p = start + i;
      if (p >= n) p -= n;
      const ep = ring[p]!;
      if (excluded !== undefined && excluded.includes(ep)) continue;
      if (!ep.breaker.admits(now)) {
        const w = ep.breaker.waitMs(now);
        if (w > 0 && w < retryAfterMs) retryAfterMs = w;
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
      return { kind: 'endpoint', endpoint: ep, tried: false };
    }
    if (fallback !== undefined) return { kind: 'endpoint', endpoint: fallback, tried: true };
    if (admissible) return { kind: 'wait', waitMs: bestWait, endpoint: waitFor };
  }
  return { kind: 'none', retryAfterMs };
}
