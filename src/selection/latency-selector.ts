/**
 * `strategy: 'latency'` for one pool (the latency feature, see latency.ts): made by the pool
 * only for that strategy, it keeps the cold-start cost an endpoint without history is given.
 */
import type { PoolState } from '../state.js';
import type { EndpointState } from './endpoint.js';
import { selectByLatency, type Selection } from './selector.js';

/** The selector; the cold-start cost is configured or the slowest estimate among endpoints with recent history (recomputed at most every 100 ms). */
export class LatencySelector<C> {
  readonly #s: PoolState<C>;
  #coldStartMs = 0;
  #coldStartAt = -Infinity;

  constructor(s: PoolState<C>) {
    this.#s = s;
  }

  select(now: number, tried: EndpointState<C>[] | undefined, excluded: EndpointState<C>[] | undefined): Selection<C> {
    const s = this.#s;
    return selectByLatency({ tiers: s.tiers, now, tried, excluded, random: s.random, coldStartMs: this.#coldStart(now) });
  }

  #coldStart(now: number): number {
    const configured = this.#s.opts.latency!.coldStartMs;
    if (configured !== undefined) return configured;
    if (now - this.#coldStartAt < 100) return this.#coldStartMs;
    let slowest = 0;
    for (const ep of this.#s.endpoints) {
      const e = ep.latency?.estimate(-1, now) ?? -1;
      if (e > slowest) slowest = e;
    }
    this.#coldStartAt = now;
    this.#coldStartMs = slowest;
    return slowest;
  }
}
