/**
 * Panic mode (the panic feature, see features.ts; the pool's `maxEjectedPercent`): a tier
 * of `n` endpoints may have at most `min(floor(n × maxEjectedPercent / 100), n − 1)`
 * endpoints out because of their breakers. With more out, the tier is in panic: selection
 * ignores its breakers and spreads calls over all of its endpoints (the rotating walk of
 * selector.ts, told which tiers panic), rather than fail every call. Rounding down keeps
 * at least one endpoint of any tier eligible, whatever the percentage. A pool built
 * without the feature refuses `maxEjectedPercent`: its breakers eject every endpoint that
 * fails, as with the option unset.
 */
import type { PoolEvent } from '../base/events.js';
import { percent } from '../options/validate.js';
import type { EndpointState } from './endpoint.js';
import { selectEndpoint, type Selection } from './selector.js';

/** What panic mode reads and moves of its pool (`PoolState`). */
export interface PanicHost<C> {
  readonly tiers: readonly (readonly EndpointState<C>[])[];
  readonly cursors: readonly number[];
  advanceCursors(): void;
  emit(event: PoolEvent): void;
}

/** Whether a tier is in panic now: more of its endpoints out because of their breakers than `maxEjectedPercent` allows. */
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

/** Checks `maxEjectedPercent`. */
export function resolveMaxEjected(value: unknown): number {
  return percent('maxEjectedPercent', value);
}

/** One pool's panic mode, made when the pool is built with `maxEjectedPercent`. */
export class PanicMode<C> {
  readonly #s: PanicHost<C>;
  readonly #percent: number;
  /** Which tiers (high, low) were in panic at the last selection: a change is an event. */
  readonly #panicking = [false, false];

  constructor(s: PanicHost<C>, maxEjectedPercent: number) {
    this.#s = s;
    this.#percent = maxEjectedPercent;
  }

  /**
   * The selection while a tier is in panic, `undefined` when none is (the strategy
   * decides); emits a `panic` event for each tier that entered or left it.
   */
  select(now: number, tried: EndpointState<C>[] | undefined, excluded: EndpointState<C>[] | undefined): Selection<C> | undefined {
    const s = this.#s;
    let any = false;
    for (let t = 0; t < 2; t++) {
      const ring = s.tiers[t]!;
      const on = ring.length > 0 && tierInPanic(ring, now, this.#percent);
      if (on !== this.#panicking[t]) {
        this.#panicking[t] = on;
        s.emit({ type: 'panic', priority: t === 0 ? 'high' : 'low', active: on });
      }
      any ||= on;
    }
    if (!any) return undefined;
    // In panic, spread calls over the whole tier, whatever the strategy.
    const picked = selectEndpoint({ tiers: s.tiers, starts: s.cursors, now, tried, excluded, panic: this.#panicking.slice() });
    s.advanceCursors();
    return picked;
  }

  /** Whether `ep`'s tier is in panic now, for a call's turn in a queue (no event: `select` emits them). */
  has(ep: EndpointState<C>, now: number): boolean {
    const ring = this.#s.tiers[ep.priority === 'high' ? 0 : 1]!;
    return ring.length > 0 && tierInPanic(ring, now, this.#percent);
  }
}
