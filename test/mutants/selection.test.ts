/**
 * Issue 15, mutation rerun: selection rules a mutant survived (Stryker on
 * src/selection/selector.ts and endpoint.ts). Pure: endpoint states built by hand, plain
 * numbers for time, no pool and no timers.
 */
import { describe, expect, test } from 'vitest';
import { resolveBreaker } from '../../src/health/breaker.js';
import { Quota, type ResolvedRateLimit } from '../../src/limits/quota.js';
import type { BasicQuota } from '../../src/limits/basic-quota.js';
import type { WaitQueue } from '../../src/limits/waiters.js';
import { EndpointState } from '../../src/selection/endpoint.js';
import { LatencyTracker } from '../../src/selection/latency.js';
import { selectByLatency, selectEndpoint } from '../../src/selection/selector.js';
import { pinnedOut, selectPinned } from '../../src/call/routing.js';
import { tierInPanic } from '../../src/selection/panic.js';
import { selectHealthiest } from '../../src/selection/health.js';

const BREAKER = resolveBreaker({ threshold: 1, cooldownMs: 1000, maxCooldownMs: 8000 });
const INF = Number.POSITIVE_INFINITY;

function limit(perSecond: number): ResolvedRateLimit {
  return { perSecond, burst: 1, mode: 'bucket', marginMs: 25, perDay: undefined, dailyStopFraction: 0.95 };
}

function ep(name: string, o: { perSecond?: number; maxInFlight?: number; quota?: BasicQuota; failures?: number; usage?: number; longUsageAt?: number; long?: number } = {}): EndpointState<string> {
  const quota = o.quota ?? new Quota(o.perSecond === undefined ? undefined : limit(o.perSecond), 0, 0);
  const e = new EndpointState(name, name, 'high', 1, o.maxInFlight ?? INF, BREAKER, quota);
  for (let i = 0; i < (o.failures ?? 0); i++) e.recentFailures.add(0);
  for (let i = 0; i < (o.usage ?? 0); i++) e.usage.add(0);
  return e;
}

/** Opens `e`'s breaker at `now` (threshold 1). */
function trip(e: EndpointState<string>, now: number): void {
  e.breaker.recordFailure(e.breaker.generation, 0, now);
}

/** Makes `e` wait `ms` for its next token (a 1000/ms-per-second bucket just emptied). */
function busy(e: EndpointState<string>, now = 0): void {
  e.quota.take(now);
}

function queued(e: EndpointState<string>, size: number): void {
  e.quota.waiters = { size } as unknown as WaitQueue;
}

const H = { windowMs: 300_000, longWindowMs: 900_000, maxWaitForHealthyMs: 1500 };

function healthiest(tiers: EndpointState<string>[][], now = 0, extra: { tried?: EndpointState<string>[]; excluded?: EndpointState<string>[]; maxWaitForHealthyMs?: number } = {}) {
  return selectHealthiest({ tiers, now, tried: extra.tried, excluded: extra.excluded, ...H, ...(extra.maxWaitForHealthyMs === undefined ? {} : { maxWaitForHealthyMs: extra.maxWaitForHealthyMs }) });
}

describe('EndpointState', () => {
  test('labels are built once per class and per code', () => {
    const e = ep('a');
    expect(e.classLabels('transient')).toBe(e.classLabels('transient'));
    expect(e.classLabels('transient')).toEqual({ endpoint: 'a', class: 'transient' });
    expect(e.classLabels('timeout')).not.toBe(e.classLabels('transient'));
    expect(e.codeLabels('NO_ENDPOINT')).toBe(e.codeLabels('NO_ENDPOINT'));
    expect(e.codeLabels('NO_ENDPOINT')).toEqual({ endpoint: 'a', code: 'NO_ENDPOINT' });
  });

  test('unavailableMs: the cooldown left while open; Infinity while the probe is out', () => {
    const e = ep('a');
    trip(e, 0);
    expect(e.unavailableMs(400)).toBe(600);
    expect(e.unavailableMs(400, true)).toBe(0);
    expect(e.unavailableMs(1000)).toBe(0);
    e.breaker.enter(1000);
    expect(e.unavailableMs(1000)).toBe(INF);
    e.disabled = true;
    expect(e.unavailableMs(1000, true)).toBe(INF);
  });

  test("unavailableMs and limitWaitMs take the longer of the quota's and the key's own", () => {
    const e = ep('a', { perSecond: 1 });
    e.own = new Quota(limit(2), 0, 0);
    e.quota.parkedUntil = 3000;
    e.own.parkedUntil = 5000;
    expect(e.unavailableMs(0)).toBe(5000);
    e.own.parkedUntil = 2000;
    expect(e.unavailableMs(0)).toBe(3000);
    e.quota.parkedUntil = 0;
    e.own.parkedUntil = 0;
    e.quota.take(0); // 1000 ms to its next token
    e.own.take(0); // 500 ms
    expect(e.limitWaitMs(0)).toBe(1000);
    expect(e.etaMs(0)).toBe(1000);
    const f = ep('f', { perSecond: 2 });
    f.own = new Quota(limit(1), 0, 0);
    f.quota.take(0); // 500 ms
    f.own.take(0); // 1000 ms
    expect(f.limitWaitMs(0)).toBe(1000);
    expect(f.etaMs(0)).toBe(1000);
    expect(f.readyInMs(0)).toBe(1000);
  });

  test('readyNow: live, available (unless the breaker is ignored), a free slot and no limit wait', () => {
    const e = ep('a', { perSecond: 1, maxInFlight: 1 });
    expect(e.readyNow(0)).toBe(true);
    e.live = false;
    expect(e.readyNow(0)).toBe(false);
    e.live = true;
    trip(e, 0);
    expect(e.readyNow(10)).toBe(false);
    expect(e.readyNow(10, true)).toBe(true);
    const f = ep('f', { perSecond: 1, maxInFlight: 1 });
    f.inFlight = 1;
    expect(f.readyNow(0)).toBe(false);
    f.inFlight = 0;
    busy(f);
    expect(f.readyNow(0)).toBe(false);
    expect(f.readyNow(1000)).toBe(true);
  });

  test('etaMs: Infinity with every slot taken; at least 1 when calls are queued; the queue adds an interval per call', () => {
    const e = ep('a', { maxInFlight: 2 });
    e.inFlight = 2;
    expect(e.etaMs(0)).toBe(INF);
    expect(e.readyInMs(0)).toBe(INF);
    e.inFlight = 1;
    expect(e.etaMs(0)).toBe(0);
    queued(e, 1);
    expect(e.etaMs(0)).toBe(1);
    expect(e.readyInMs(0)).toBe(1);
    const f = ep('f', { perSecond: 1 });
    queued(f, 2);
    expect(f.readyInMs(0)).toBe(2000);
    expect(f.limitWaitMs(0)).toBe(0);
  });
});

describe('selectEndpoint and tierInPanic', () => {
  test('a weighted ring counts each endpoint once for panic', () => {
    const a = ep('a');
    const b = ep('b');
    trip(a, 0);
    expect(tierInPanic([a, a, b], 10, 50)).toBe(false);
    expect(tierInPanic([a, a, b], 10, 0)).toBe(true);
  });

  test('equal waits: the first endpoint of the walk is the one waited for', () => {
    const a = ep('a', { perSecond: 1 });
    const b = ep('b', { perSecond: 1 });
    busy(a);
    busy(b);
    expect(selectEndpoint({ tiers: [[a, b], []], starts: [0, 0], now: 0, tried: undefined, excluded: undefined })).toEqual({ kind: 'wait', waitMs: 1000, endpoint: a });
    expect(selectEndpoint({ tiers: [[a, b], []], starts: [1, 0], now: 0, tried: undefined, excluded: undefined })).toEqual({ kind: 'wait', waitMs: 1000, endpoint: b });
  });

  test('an endpoint with every slot taken is still the one to wait for (Infinity: until an attempt ends)', () => {
    const a = ep('a', { maxInFlight: 1 });
    a.inFlight = 1;
    expect(selectEndpoint({ tiers: [[a], []], starts: [0, 0], now: 0, tried: undefined, excluded: undefined })).toEqual({ kind: 'wait', waitMs: INF, endpoint: a });
  });

  test('in panic the pick is a fresh, untried one', () => {
    const a = ep('a');
    trip(a, 0);
    expect(selectEndpoint({ tiers: [[a], []], starts: [0, 0], now: 10, tried: undefined, excluded: undefined, panic: [true, false] })).toEqual({ kind: 'endpoint', endpoint: a, tried: false, panic: true });
  });
});

describe('selectHealthiest', () => {
  test('nothing available: none, with the shortest time until one may be', () => {
    const a = ep('a');
    const b = ep('b');
    trip(a, 0);
    trip(b, 500);
    expect(healthiest([[a, b], []], 700)).toEqual({ kind: 'none', retryAfterMs: 300 });
    expect(healthiest([[], []], 700)).toEqual({ kind: 'none', retryAfterMs: INF });
  });

  test('nothing ready, nothing within the bound: wait for the soonest, ties to the better rank', () => {
    const a = ep('a', { perSecond: 0.25 }); // 4000 ms
    const b = ep('b', { perSecond: 0.5 }); // 2000 ms
    const c = ep('c', { perSecond: 0.5, failures: 1 }); // 2000 ms, worse
    for (const e of [a, b, c]) busy(e);
    expect(healthiest([[a, c, b], []])).toEqual({ kind: 'wait', waitMs: 2000, endpoint: b });
    expect(healthiest([[a, b, c], []])).toEqual({ kind: 'wait', waitMs: 2000, endpoint: b });
    expect(healthiest([[c, a], []])).toEqual({ kind: 'wait', waitMs: 2000, endpoint: c });
    expect(healthiest([[a, c], []])).toEqual({ kind: 'wait', waitMs: 2000, endpoint: c });
  });

  test('nothing ready but an untried one within the bound: wait for the soonest of those, ties to the better rank', () => {
    const slow = ep('slow', { perSecond: 1 }); // 1000 ms
    const fast = ep('fast', { perSecond: 2, failures: 1 }); // 500 ms
    const twin = ep('twin', { perSecond: 2 }); // 500 ms, healthier
    const readyTried = ep('tried');
    for (const e of [slow, fast, twin]) busy(e);
    expect(healthiest([[slow, fast, readyTried], []], 0, { tried: [readyTried] })).toEqual({ kind: 'wait', waitMs: 500, endpoint: fast });
    expect(healthiest([[fast, twin, slow], []])).toEqual({ kind: 'wait', waitMs: 500, endpoint: twin });
    expect(healthiest([[twin, fast], []])).toEqual({ kind: 'wait', waitMs: 500, endpoint: twin });
    // Beyond the bound, a ready tried endpoint goes instead.
    expect(healthiest([[slow, readyTried], []], 0, { tried: [readyTried], maxWaitForHealthyMs: 999 })).toEqual({ kind: 'endpoint', endpoint: readyTried, tried: true });
    // Exactly at the bound still waits.
    expect(healthiest([[slow, readyTried], []], 0, { tried: [readyTried], maxWaitForHealthyMs: 1000 })).toEqual({ kind: 'wait', waitMs: 1000, endpoint: slow });
  });

  test('a failing ready endpoint: wait for the soonest healthy one (not a failing one, however soon)', () => {
    const bad = ep('bad', { failures: 2 });
    const sick = ep('sick', { perSecond: 5, failures: 1 }); // 200 ms, not healthy
    const h1 = ep('h1', { perSecond: 1 }); // 1000 ms
    const h2 = ep('h2', { perSecond: 2 }); // 500 ms
    const h3 = ep('h3', { perSecond: 2, usage: 1 }); // 500 ms, more used
    for (const e of [sick, h1, h2, h3]) busy(e);
    expect(healthiest([[bad, sick, h1, h2], []])).toEqual({ kind: 'wait', waitMs: 500, endpoint: h2 });
    expect(healthiest([[bad, h3, h2], []])).toEqual({ kind: 'wait', waitMs: 500, endpoint: h2 });
    expect(healthiest([[bad, h2, h3], []])).toEqual({ kind: 'wait', waitMs: 500, endpoint: h2 });
    expect(healthiest([[bad, sick], []])).toEqual({ kind: 'endpoint', endpoint: bad, tried: false });
  });

  test('two ready tried endpoints: the better ranked one', () => {
    const good = ep('good');
    const worse = ep('worse', { failures: 1 });
    expect(healthiest([[good, worse], []], 0, { tried: [good, worse] })).toEqual({ kind: 'endpoint', endpoint: good, tried: true });
    expect(healthiest([[worse, good], []], 0, { tried: [good, worse] })).toEqual({ kind: 'endpoint', endpoint: good, tried: true });
  });

  test('ranking: usage over the short window before the long one; the long one when the short ties', () => {
    const a = ep('a');
    const b = ep('b');
    // a: used once now (short and long); b: used twice 10 minutes ago (long only).
    a.usage.add(600_000);
    b.usage.add(0);
    b.usage.add(0);
    expect(healthiest([[b, a], []], 600_000)).toMatchObject({ kind: 'endpoint', endpoint: b });
    const c = ep('c');
    const d = ep('d');
    d.usage.add(0);
    d.usage.add(0);
    expect(healthiest([[c, d], []], 600_000)).toMatchObject({ kind: 'endpoint', endpoint: c });
  });

  test('whether the healthy endpoints cover the demand decides between waiting and going now', () => {
    // The failing endpoint is ready; the healthy one (1/s) waits 1000 ms, within the bound.
    const make = (badUsage: number, extra: (bad: EndpointState<string>, good: EndpointState<string>) => EndpointState<string>[] = (b, g) => [b, g]) => {
      const bad = ep('bad', { perSecond: 1, failures: 1 });
      const good = ep('good', { perSecond: 1 });
      for (let i = 0; i < badUsage; i++) bad.usage.add(1000);
      busy(good, 1000);
      return { bad, good, ring: extra(bad, good) };
    };
    const wait = (r: { good: EndpointState<string> }) => ({ kind: 'wait', waitMs: 1000, endpoint: r.good });
    // Demand 1/s, healthy capacity 1/s: covered (>=), so wait for the healthy one.
    const one = make(1);
    expect(healthiest([one.ring, []], 1000, { maxWaitForHealthyMs: 1500 })).toEqual(wait(one));
    // Demand 2/s: not covered, the failing one goes now (its own capacity does not count).
    const two = make(2);
    expect(healthiest([two.ring, []], 1000, { maxWaitForHealthyMs: 1500 })).toEqual({ kind: 'endpoint', endpoint: two.bad, tried: false });
    // The same endpoint twice in a weighted ring counts once.
    const weighted = make(1, (b, g) => [b, b, g]);
    expect(healthiest([weighted.ring, []], 1000, { maxWaitForHealthyMs: 1500 })).toEqual(wait(weighted));
    // A disabled endpoint adds no capacity.
    const disabled = make(2, (b, g) => {
      const off = ep('off', { perSecond: 5 });
      off.disabled = true;
      return [b, g, off];
    });
    expect(healthiest([disabled.ring, []], 1000, { maxWaitForHealthyMs: 1500 })).toMatchObject({ kind: 'endpoint', endpoint: disabled.bad });
    // Two healthy members of one group count their shared quota once.
    const shared = make(2, (b, g) => [b, g, ep('sibling', { quota: g.quota })]);
    expect(healthiest([shared.ring, []], 1000, { maxWaitForHealthyMs: 1500 })).toMatchObject({ kind: 'endpoint', endpoint: shared.bad });
    // An unlimited healthy endpoint covers any demand.
    const unlimited = make(5, (b, g) => {
      const free = ep('free', { maxInFlight: 1 });
      free.inFlight = 1; // not ready: waits for a slot (Infinity), so it is not the one waited for
      return [b, g, free];
    });
    expect(healthiest([unlimited.ring, []], 1000, { maxWaitForHealthyMs: 1500 })).toEqual(wait(unlimited));
  });
});

describe('selectByLatency', () => {
  const seq = (...values: number[]) => {
    let i = 0;
    return () => values[Math.min(i++, values.length - 1)]!;
  };
  const latency = (e: EndpointState<string>, ms: number) => (e.latency ??= new LatencyTracker()).observe(0, ms, false, 10_000, 10_000);
  const run = (tiers: EndpointState<string>[][], random: () => number, extra: { tried?: EndpointState<string>[]; excluded?: EndpointState<string>[] } = {}) =>
    selectByLatency({ tiers, now: 0, tried: extra.tried, excluded: extra.excluded, random, coldStartMs: 100 });

  test('a single endpoint: the walk decides', () => {
    const a = ep('a');
    expect(run([[a], []], () => 0.5)).toEqual({ kind: 'endpoint', endpoint: a, tried: false });
  });

  test('two candidates of equal cost: the first drawn', () => {
    const a = ep('a');
    const b = ep('b');
    expect(run([[a, b], []], seq(0, 0.9))).toMatchObject({ endpoint: a });
    expect(run([[a, b], []], seq(0.9, 0))).toMatchObject({ endpoint: b });
  });

  test('the draws stop at the second candidate, and skip excluded, tried, unavailable and busy ones', () => {
    const a = ep('a');
    const b = ep('b');
    const c = ep('c');
    latency(a, 300);
    latency(b, 10);
    latency(c, 100);
    // Draws a, then b: b is cheaper. Later draws (c) change nothing.
    expect(run([[a, b, c], []], seq(0, 0.4, 0.9))).toMatchObject({ endpoint: b });
    // x is cheapest but excluded, tried, open or busy: the pair is b and c, and b is cheaper.
    const x = ep('x');
    latency(x, 1);
    expect(run([[x, b, c], []], seq(0, 0.4, 0.9))).toMatchObject({ endpoint: x });
    expect(run([[x, b, c], []], seq(0, 0.4, 0.9), { excluded: [x] })).toMatchObject({ endpoint: b });
    expect(run([[x, b, c], []], seq(0, 0.4, 0.9), { tried: [x] })).toMatchObject({ endpoint: b });
    trip(x, 0);
    expect(run([[x, b, c], []], seq(0, 0.4, 0.9))).toMatchObject({ endpoint: b });
    const d = ep('d', { maxInFlight: 1 });
    latency(d, 1);
    d.inFlight = 1;
    expect(run([[d, b, c], []], seq(0, 0.4, 0.9))).toMatchObject({ endpoint: b });
  });

  test('eight draws at most, then the walk from a random start', () => {
    const a = ep('a');
    const b = ep('b');
    // Eight draws all land on a; the ninth value starts the walk at b.
    expect(run([[a, b], []], seq(0, 0, 0, 0, 0, 0, 0, 0, 0.9))).toMatchObject({ endpoint: b });
  });

  test('both tried: the walk from the random start picks the tried one there', () => {
    const a = ep('a');
    const b = ep('b');
    expect(run([[a, b], []], () => 0.9, { tried: [a, b] })).toEqual({ kind: 'endpoint', endpoint: b, tried: true, panic: false });
    expect(run([[a, b], []], () => 0, { tried: [a, b] })).toEqual({ kind: 'endpoint', endpoint: a, tried: true, panic: false });
  });

  test('a tier with nothing available passes to the next; none at all gives none', () => {
    const a = ep('a');
    const low = ep('low');
    trip(a, 0);
    expect(run([[a], [low]], () => 0.5)).toEqual({ kind: 'endpoint', endpoint: low, tried: false });
    trip(low, 0);
    expect(run([[a], [low]], () => 0.5)).toEqual({ kind: 'none', retryAfterMs: 1000 });
    expect(run([[], []], () => 0.5)).toEqual({ kind: 'none', retryAfterMs: INF });
  });
});

describe('selectPinned', () => {
  test('why a pinned endpoint cannot serve, or when it can', () => {
    const a = ep('a', { perSecond: 1 });
    expect(selectPinned(a, 0, undefined, undefined)).toEqual({ kind: 'endpoint', endpoint: a, tried: false });
    expect(selectPinned(a, 0, [a], undefined)).toEqual({ kind: 'endpoint', endpoint: a, tried: true });
    expect(selectPinned(a, 0, [ep('b')], undefined)).toEqual({ kind: 'endpoint', endpoint: a, tried: false });
    expect(selectPinned(a, 0, undefined, [a])).toBe('pinned endpoint "a" cannot serve: it answered that it does not support this operation');
    expect(selectPinned(a, 0, undefined, [ep('b')])).toMatchObject({ kind: 'endpoint' });
    busy(a);
    expect(selectPinned(a, 0, undefined, undefined)).toEqual({ kind: 'wait', waitMs: 1000, endpoint: a });
    trip(a, 0);
    expect(selectPinned(a, 400, undefined, undefined)).toEqual({ kind: 'none', retryAfterMs: 600 });
    expect(pinnedOut(a, 400)).toBe('pinned endpoint "a" cannot serve: its breaker is open');
    a.disabled = true;
    expect(selectPinned(a, 400, undefined, undefined)).toBe('pinned endpoint "a" cannot serve: it is disabled');
    a.live = false;
    expect(selectPinned(a, 400, undefined, undefined)).toBe('pinned endpoint "a" cannot serve: it was removed from the pool');
  });
});
