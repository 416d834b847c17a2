/**
 * Selection with a call's long tried and excluded lists (selection/marks.ts): past eight
 * endpoints a list is marked on its endpoints for the selection instead of searched. On
 * generated tiers (10 to 60 endpoints, weights as repeats, open breakers, endpoints at their
 * in-flight limit, long and short lists, any start), each selector (`ordered` / `round-robin`
 * / `random`'s walk, `latency`, `health`, a walk in panic) picks exactly what it picks when the
 * same lists are only searched. Seeded: `FC_SEED`, `FC_SELECT_RUNS` (default 400).
 */
import { describe, expect, test } from 'vitest';
import { EndpointState } from '../src/selection/endpoint.js';
import { resolveBreaker } from '../src/health/breaker.js';
import { Quota } from '../src/limits/quota.js';
import { selectByLatency, selectEndpoint, type Selection } from '../src/selection/selector.js';
import { selectHealthiest } from '../src/selection/health.js';
import { Counted } from './helpers/counted.js';
import { seeded } from './helpers/prng.js';

const RUNS = Number(process.env['FC_SELECT_RUNS'] ?? 400);
const FIRST_SEED = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : 2026120641;
const BREAKER = resolveBreaker({ threshold: 1, cooldownMs: 1_000, maxCooldownMs: 8_000 });

type Ep = EndpointState<string>;

/** The same membership as `list`, but with a length that keeps it searched (through its own `includes`). */
function searchedOnly(list: Ep[] | undefined): Ep[] | undefined {
  if (list === undefined) return undefined;
  const set = new Set(list);
  return { length: 0, includes: (ep: Ep) => set.has(ep) } as unknown as Ep[];
}

const describeSel = (s: Selection<string>): string => (s.kind === 'endpoint' ? `endpoint ${s.endpoint.name}${s.tried ? ' (tried)' : ''}${s.panic === true ? ' (panic)' : ''}` : s.kind === 'wait' ? `wait ${s.waitMs} for ${s.endpoint?.name}` : `none ${s.retryAfterMs}`);

describe('selection with long tried and excluded lists', () => {
  test(`picks what a plain search of the same lists picks (${RUNS} runs)`, () => {
    let marked = 0;
    for (let run = 0; run < RUNS; run++) {
      const seed = FIRST_SEED + run;
      const r = seeded(seed);
      const n = 10 + Math.floor(r() * 51);
      const now = 5_000;
      // Now and then the high tier is all out (a walk of it finds none: the low tier decides).
      const highOut = r() < 0.3;
      const eps: Ep[] = Array.from({ length: n }, (_, i) => new EndpointState(`e${i}`, `e${i}`, r() < (highOut ? 0.4 : 0.7) ? 'high' : 'low', 1, r() < 0.2 ? 1 : Number.POSITIVE_INFINITY, BREAKER, new Quota(undefined, 0, 0)));
      for (const e of eps) {
        if (r() < 0.3 || (highOut && e.priority === 'high')) e.breaker.recordFailure(e.breaker.generation, e.breaker.enter(now - Math.floor(r() * 2_000)), now - Math.floor(r() * 2_000));
        if (e.maxInFlight === 1 && r() < 0.5) e.inFlight = 1;
        // Some history for the health ranking.
        e.attempts = Math.floor(r() * 20);
        e.failures = Math.floor(r() * e.attempts);
      }
      const tiers: Ep[][] = [[], []];
      for (const e of eps) {
        const t = e.priority === 'high' ? 0 : 1;
        const copies = r() < 0.15 ? 2 : 1;
        for (let k = 0; k < copies; k++) tiers[t]!.push(e);
      }
      const subset = (p: number): Ep[] | undefined => (r() < 0.2 ? undefined : eps.filter(() => r() < p));
      // Long lists mostly: a call that has walked much of the pool.
      const tried = subset(0.3 + 0.7 * r());
      const excluded = subset(r() * 0.6);
      if ((tried?.length ?? 0) > 8 || (excluded?.length ?? 0) > 8) marked++;
      const starts = [Math.floor(r() * Math.max(1, tiers[0]!.length)), Math.floor(r() * Math.max(1, tiers[1]!.length))];
      const panic = [r() < 0.2, r() < 0.2];
      const drawSeed = Math.floor(r() * 2 ** 31);
      const cases: [string, (t: Ep[] | undefined, x: Ep[] | undefined) => Selection<string>][] = [
        ['walk', (t, x) => selectEndpoint({ tiers, starts, now, tried: t, excluded: x })],
        ['walk in panic', (t, x) => selectEndpoint({ tiers, starts, now, tried: t, excluded: x, panic })],
        ['latency', (t, x) => selectByLatency({ tiers, now, tried: t, excluded: x, random: seeded(drawSeed), coldStartMs: 100 })],
        ['health', (t, x) => selectHealthiest({ tiers, now, tried: t, excluded: x, windowMs: 300_000, longWindowMs: 900_000, maxWaitForHealthyMs: 1_500 })],
      ];
      for (const [name, select] of cases) {
        const want = describeSel(select(searchedOnly(tried), searchedOnly(excluded)));
        const got = describeSel(select(tried, excluded));
        expect(got, `seed ${seed}, ${name}: ${n} endpoints, tried ${tried?.length}, excluded ${excluded?.length}`).toBe(want);
      }
    }
    // Most runs reach the marked path.
    expect(marked).toBeGreaterThan(RUNS / 2);
  });

  test('a long list is marked, not searched: no `includes` on it during the walk; a short one is searched', () => {
    const eps = Array.from({ length: 40 }, (_, i) => new EndpointState(`e${i}`, `e${i}`, 'high', 1, Number.POSITIVE_INFINITY, BREAKER, new Quota(undefined, 0, 0)));
    const tiers = [eps, []];
    const long = Counted.holding(eps.slice(0, 30));
    const sel = selectEndpoint({ tiers, starts: [0, 0], now: 0, tried: long, excluded: undefined });
    expect(sel.kind === 'endpoint' && sel.endpoint.name).toBe('e30');
    expect(long.searches).toBe(0);
    const short = Counted.holding(eps.slice(0, 3));
    expect(selectEndpoint({ tiers, starts: [0, 0], now: 0, tried: short, excluded: undefined }).kind).toBe('endpoint');
    expect(short.searches).toBe(4); // e0, e1, e2 tried, e3 not
  });
});
