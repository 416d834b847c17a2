/**
 * `strategy: 'health'` ranks every endpoint of a tier on every selection, so it was made
 * cheaper per endpoint (ranking read lazily, the counters' sums cached): these properties
 * hold the fast version to the plain one it replaced, and the counter's cache to a model
 * with no cache.
 */
import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { RollingCounter } from '../src/limits/window.js';
import { selectHealthiest } from '../src/selection/health.js';
import type { Selection } from '../src/selection/selector.js';
import type { EndpointState } from '../src/selection/endpoint.js';
import { RUNS, seedFor } from './properties/run.js';

/** The ranking as first written: every endpoint's figures read up front, into an object. */
function reference(input: Parameters<typeof selectHealthiest<string>>[0]): Selection<string> {
  interface R { ep: EndpointState<string>; failures: number; usage: number; longUsage: number; order: number }
  const { tiers, now, tried, excluded, windowMs, longWindowMs, maxWaitForHealthyMs } = input;
  const rank = (ep: EndpointState<string>, order: number): R => ({ ep, failures: ep.recentFailures.sum(now, windowMs), usage: ep.usage.sum(now, windowMs), longUsage: ep.usage.sum(now, longWindowMs), order });
  const better = (a: R, b: R): boolean =>
    a.failures !== b.failures ? a.failures < b.failures : a.usage !== b.usage ? a.usage < b.usage : a.longUsage !== b.longUsage ? a.longUsage < b.longUsage : a.order < b.order;
  let retryAfterMs = Infinity;
  for (const ring of tiers) {
    let admissible = false;
    let soonestWait = Infinity, pendingWait = Infinity, healthyWait = Infinity;
    let soonest: R | undefined, ready: R | undefined, readyTried: R | undefined, pending: R | undefined, healthy: R | undefined;
    ring.forEach((ep, i) => {
      if (excluded?.includes(ep)) return;
      const out = ep.unavailableMs(now);
      if (out > 0) {
        retryAfterMs = Math.min(retryAfterMs, out);
        return;
      }
      admissible = true;
      const wait = ep.etaMs(now);
      const isTried = tried?.includes(ep) ?? false;
      const r = rank(ep, i);
      if (wait > 0) {
        if (soonest === undefined || wait < soonestWait || (wait === soonestWait && better(r, soonest))) [soonestWait, soonest] = [wait, r];
        if (isTried || wait > maxWaitForHealthyMs) return;
        if (pending === undefined || wait < pendingWait || (wait === pendingWait && better(r, pending))) [pendingWait, pending] = [wait, r];
        if (r.failures === 0 && (healthy === undefined || wait < healthyWait || (wait === healthyWait && better(r, healthy)))) [healthyWait, healthy] = [wait, r];
        return;
      }
      if (isTried) {
        if (readyTried === undefined || better(r, readyTried)) readyTried = r;
      } else if (ready === undefined || better(r, ready)) ready = r;
    });
    if (ready !== undefined) {
      if (ready.failures > 0 && healthy !== undefined) {
        let capacity = 0, demand = 0;
        const counted: unknown[] = [];
        for (const ep of ring) {
          if (counted.includes(ep)) continue;
          counted.push(ep);
          demand += ep.usage.rate(now, 2);
          if (ep.recentFailures.sum(now, windowMs) > 0 || ep.unavailableMs(now) > 0 || counted.includes(ep.quota)) continue;
          counted.push(ep.quota);
          capacity += ep.quota.perSecond ?? Infinity;
        }
        if (capacity >= demand) return { kind: 'wait', waitMs: healthyWait, endpoint: healthy.ep };
      }
      return ready.ep.pick;
    }
    if (pending !== undefined) return { kind: 'wait', waitMs: pendingWait, endpoint: pending.ep };
    if (readyTried !== undefined) return { kind: 'endpoint', endpoint: readyTried.ep, tried: true };
    if (admissible) return { kind: 'wait', waitMs: soonestWait, endpoint: soonest?.ep };
  }
  return { kind: 'none', retryAfterMs };
}

/** What the selection reads of an endpoint, with small values so that ties are common. */
const endpointArb = fc.record({
  out: fc.constantFrom(0, 0, 0, 250, 900),
  eta: fc.constantFrom(0, 0, 500, 1000, 1500, 2000),
  failures: fc.constantFrom(0, 0, 1, 2),
  usage: fc.nat(3),
  longExtra: fc.nat(2),
  rate: fc.constantFrom(0, 0.5, 2, 6),
  perSecond: fc.constantFrom(undefined, 1, 2, 5),
  quota: fc.nat(3),
});

type Spec = typeof endpointArb extends fc.Arbitrary<infer T> ? T : never;

function endpoints(specs: Spec[]): EndpointState<string>[] {
  const quotas = [0, 1, 2, 3].map(() => ({}));
  return specs.map((s, i) => {
    const quota = Object.assign(quotas[s.quota]!, { perSecond: s.perSecond });
    const ep = {
      name: `e${i}`,
      quota,
      unavailableMs: () => s.out,
      etaMs: () => s.eta,
      recentFailures: { sum: () => s.failures },
      usage: { sum: (_: number, span: number) => (span > 300_000 ? s.usage + s.longExtra : s.usage), rate: () => s.rate },
    } as unknown as { pick: unknown };
    ep.pick = { kind: 'endpoint', endpoint: ep, tried: false };
    return ep as unknown as EndpointState<string>;
  });
}

describe("strategy: 'health' picks as the plain ranking did", () => {
  test(`same selection on generated tiers, tried and excluded sets (${RUNS} runs)`, () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(endpointArb, { maxLength: 8 }), { minLength: 1, maxLength: 3 }),
        fc.array(fc.nat(30), { maxLength: 6 }),
        fc.array(fc.nat(30), { maxLength: 3 }),
        fc.array(fc.tuple(fc.nat(2), fc.nat(30)), { maxLength: 3 }),
        fc.constantFrom(0, 1000, 1500),
        (tierSpecs, triedAt, excludedAt, repeats, maxWaitForHealthyMs) => {
          const tiers = tierSpecs.map(endpoints);
          // The same endpoint twice in a ring (a weighted configuration can repeat one).
          for (const [t, at] of repeats) {
            const ring = tiers[t % tiers.length]!;
            if (ring.length > 0) ring.push(ring[at % ring.length]!);
          }
          const all = tiers.flat();
          const pickOf = (at: number[]): EndpointState<string>[] | undefined => (at.length === 0 || all.length === 0 ? undefined : at.map((i) => all[i % all.length]!));
          const input = { tiers, now: 1_000, tried: pickOf(triedAt), excluded: pickOf(excludedAt), windowMs: 300_000, longWindowMs: 900_000, maxWaitForHealthyMs };
          expect(selectHealthiest(input)).toEqual(reference(input));
        },
      ),
      { numRuns: RUNS * 5, seed: seedFor() },
    );
  });
});

describe('RollingCounter: cached sums', () => {
  test(`agree with a count of the events by bucket, under adds, sums and clock steps both ways (${RUNS} runs)`, () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), dt: fc.integer({ min: -3_000, max: 4_000 }), n: fc.integer({ min: 1, max: 3 }) }),
      fc.record({ kind: fc.constant('sum' as const), dt: fc.integer({ min: -3_000, max: 4_000 }), span: fc.integer({ min: 0, max: 12_000 }) }),
    );
    fc.assert(
      fc.property(fc.constantFrom(250, 1000), fc.integer({ min: 1, max: 8 }), fc.array(step, { maxLength: 60 }), (bucketMs, buckets, steps) => {
        const counter = new RollingCounter(buckets, bucketMs);
        const events: { bucket: number; n: number }[] = [];
        let newest = -Infinity;
        let now = 100_000;
        for (const s of steps) {
          now = Math.max(0, now + s.dt);
          // The counter's rule: a time before the newest bucket counts into the newest one.
          newest = Math.max(newest, Math.floor(now / bucketMs));
          if (s.kind === 'add') {
            counter.add(now, s.n);
            events.push({ bucket: newest, n: s.n });
          } else {
            const n = Math.min(buckets, Math.ceil(s.span / bucketMs));
            const expected = events.filter((e) => e.bucket > newest - n).reduce((a, e) => a + e.n, 0);
            expect(counter.sum(now, s.span)).toBe(expected);
          }
        }
      }),
      { numRuns: RUNS * 2, seed: seedFor() },
    );
  });
});
