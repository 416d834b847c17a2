/**
 * Issue 15, limiters mutation rerun: the adaptive controller (src/limits/adaptive.ts) on
 * made-up times, number by number: which refusals count, the reading of accepted calls,
 * the anchor rounded to whole calls, the floor at half the rate unless busy, and the
 * schedule back up (approach, hold, probe).
 */
import { describe, expect, test } from 'vitest';
import { AdaptiveLimit, type ResolvedAdaptive } from '../../src/limits/adaptive.js';

const opts = (o: Partial<ResolvedAdaptive> = {}): ResolvedAdaptive => ({ min: 0.1, max: 100, decrease: 0.5, windowMs: 1000, holdMs: 5000, maxHoldMs: 20_000, doublingMs: 8000, ...o });

function ok(a: AdaptiveLimit, times: number[]): void {
  for (const t of times) a.succeeded(t);
}

/** `n` evenly spread times in [from, to). */
function spread(from: number, to: number, n: number): number[] {
  return Array.from({ length: n }, (_, i) => from + ((to - from) * i) / n);
}

describe('which rate-limited answers count', () => {
  test('one decrease per window, and only for calls sent at or after it', () => {
    const a = new AdaptiveLimit(opts(), 20, 0);
    expect(a.limited(1000, 999)).toBe(10);
    expect(a.limited(1999, 1500)).toBeUndefined();
    expect(a.limited(2000, 999)).toBeUndefined();
    // A whole window later, sent at the decrease itself: counted.
    expect(a.limited(2000, 1000)).toBe(5);
  });
});

describe('the refused rate', () => {
  test('before any rise, a call sent before the controller started was sent at its start rate', () => {
    const a = new AdaptiveLimit(opts(), 20, 1000);
    expect(a.limited(2000, 500)).toBe(10);
  });
});

describe('the reading of accepted calls', () => {
  test('the shortest span of 1, 2, 4 or 8 windows with 4 successes; the current slot is left out', () => {
    // 6 in the first second, 3 in the next: over two windows, 4.5/s, rounded to a limit of 5.
    const a = new AdaptiveLimit(opts(), 6, 0);
    ok(a, [...spread(0, 1000, 6), ...spread(1000, 2000, 3)]);
    ok(a, [2000, 2100, 2200, 2300, 2400]); // the current slot: not read
    expect(a.limited(2400, 2400)).toBe(5);
    expect(a.anchor).toBe(5);
  });

  test('one window with 4 successes is enough', () => {
    const a = new AdaptiveLimit(opts(), 20, 0);
    ok(a, spread(1000, 2000, 4));
    a.limited(2000, 2000);
    expect(a.anchor).toBe(4);
  });

  test('a reading of 0.75/s is a limit of 1 (whole calls); the rate restarts 5 % under it', () => {
    const a = new AdaptiveLimit(opts(), 1.5, 0);
    ok(a, [500, 1500, 2500, 4500, 5500, 6500]); // 6 in 8 windows, under 4 in any shorter span
    expect(a.limited(8000, 8000)).toBeCloseTo(0.95, 12);
    expect(a.anchor).toBe(1);
  });

  test('under 0.75/s the reading is kept as it is', () => {
    const a = new AdaptiveLimit(opts(), 1.5, 0);
    ok(a, [500, 1500, 2500, 4500, 5500]); // 5 in 8 windows: 0.625/s
    a.limited(8000, 8000);
    expect(a.anchor).toBe(0.625);
  });

  test('a reading not clearly under the refused rate: the limit moved under it, multiply', () => {
    const a = new AdaptiveLimit(opts({ decrease: 0.8 }), 5, 0);
    const readings = [...spread(0, 1000, 6), ...spread(1000, 2000, 3)]; // 4.5/s over two windows
    ok(a, readings); // under 95 % of 5, so it is read
    a.limited(2000, 2000);
    expect(a.anchor).toBe(4.5); // 5 would be the rate just refused: not rounded up to it
    const b = new AdaptiveLimit(opts({ decrease: 0.8 }), 4.6, 0);
    ok(b, readings); // 4.5/s is above 95 % of 4.6
    expect(b.limited(2000, 2000)).toBeCloseTo(4.6 * 0.8, 12);
  });

  test('not busy: never under half the rate in force; busy: straight to the reading', () => {
    const idle = new AdaptiveLimit(opts(), 20, 0);
    for (const t of spread(0, 1000, 5)) idle.taken(t); // 5 of the 40 it could send in two windows
    ok(idle, spread(0, 1000, 4));
    expect(idle.limited(1000, 1000)).toBe(10);
    expect(idle.anchor).toBe(4);
    const busy = new AdaptiveLimit(opts(), 20, 0);
    // Sent 20/s for two windows: all its limiter allowed.
    for (const t of spread(0, 2000, 40)) busy.taken(t);
    ok(busy, spread(1000, 2000, 4));
    expect(busy.limited(2000, 2000)).toBe(4);
  });
});

describe('clamp', () => {
  test('min and max bound every rate, exactly', () => {
    const a = new AdaptiveLimit(opts({ min: 5, max: 8 }), 20, 0);
    expect(a.rate).toBe(8);
    expect(a.limited(1000, 1000)).toBe(5);
    expect(new AdaptiveLimit(opts({ min: 5, max: 8 }), 1, 0).rate).toBe(5);
  });
});

/** Sends at the rate in force (busy), every send a success, from `t` for `ms`; records each rise as [time, rate]. */
function busy(a: AdaptiveLimit, t: number, ms: number, rises: [number, number][] = [], succeed = true): number {
  const end = t + ms;
  while (t < end) {
    a.taken(t);
    if (succeed) a.succeeded(t);
    const r = a.increase(t, 1000 / a.rate);
    if (r !== undefined) rises.push([t, r]);
    t += 1000 / a.rate;
  }
  return end;
}

/** A controller that just decreased (busy) to an anchor of `anchor`/s at `t`. */
function anchored(anchor: number, o: Partial<ResolvedAdaptive> = {}): { a: AdaptiveLimit; t: number } {
  const a = new AdaptiveLimit(opts(o), anchor * 2, 0);
  // Sends all it may (2 × anchor a second), the server accepts `anchor` a second.
  const sendEvery = 1000 / (anchor * 2);
  const okEvery = 1000 / anchor;
  for (let s = 0, n = 0; s < 2000; s += sendEvery, n++) {
    a.taken(s);
    if (n % Math.round(okEvery / sendEvery) === 0) a.succeeded(s);
  }
  a.limited(2000, 2000);
  return { a, t: 2000 };
}

describe('the schedule back up', () => {
  test('nothing found yet: the rate doubles every doublingMs of busy time', () => {
    const a = new AdaptiveLimit(opts({ max: 1000 }), 4, 0);
    busy(a, 0, 8000);
    // Busy time starts once two windows of history show it (so a little under 8 s here).
    expect(a.rate).toBeGreaterThan(6);
    expect(a.rate).toBeLessThanOrEqual(8);
    busy(a, 8000, 8000);
    expect(a.rate).toBeGreaterThan(12);
    expect(a.rate).toBeLessThanOrEqual(16);
  });

  test('one rise per window at most', () => {
    const a = new AdaptiveLimit(opts({ max: 1000 }), 4, 0);
    const rises: [number, number][] = [];
    busy(a, 0, 10_000, rises);
    expect(rises.length).toBeGreaterThan(5);
    for (let i = 1; i < rises.length; i++) expect(rises[i]![0] - rises[i - 1]![0]).toBeGreaterThanOrEqual(1000);
  });

  test('an idle gap adds no busy time', () => {
    const a = new AdaptiveLimit(opts({ max: 1000 }), 4, 0);
    busy(a, 0, 2000);
    const before = a.rate;
    // Nothing for 60 s, then busy again for a second: the doubling schedule has not moved by 60 s.
    busy(a, 62_000, 3000);
    expect(a.rate).toBeLessThan(before * 2);
  });

  test('after a decrease: up to the anchor within two windows, hold holdMs, then one call per window above it', () => {
    const { a, t } = anchored(20);
    expect(a.anchor).toBe(20);
    expect(a.rate).toBe(19);
    const rises: [number, number][] = [];
    busy(a, t, 12_000, rises);
    const at = (ms: number) => rises.filter(([x]) => x - t <= ms).at(-1)?.[1];
    // The approach: part way after one window, the anchor after two.
    expect(at(1500)).toBeGreaterThan(19);
    expect(at(1500)).toBeLessThan(20);
    expect(at(3000)).toBe(20);
    // The hold: nothing above 20 before 2 s + 5 s of busy time.
    expect(rises.filter(([x, r]) => r > 20 && x - t < 7000)).toEqual([]);
    const probe = rises.find(([, r]) => r > 20)!;
    expect(probe[0] - t).toBeLessThan(8500);
    expect(probe[1]).toBeCloseTo(21, 1);
    // Then faster: each step above the last.
    const above = rises.filter(([, r]) => r > 20).map(([, r]) => r);
    expect(above.length).toBeGreaterThan(2);
    for (let i = 2; i < above.length; i++) expect(above[i]! - above[i - 1]!).toBeGreaterThan(above[i - 1]! - above[i - 2]!);
  });

  test('an anchor of 1/s probes at 2/s; under 1/s the probe starts at the anchor', () => {
    const one = anchored(1);
    expect(one.a.anchor).toBe(1);
    const rises: [number, number][] = [];
    busy(one.a, one.t, 9000, rises);
    expect(rises.find(([, r]) => r > 1)?.[1]).toBeCloseTo(2, 1);
    const half = new AdaptiveLimit(opts(), 1, 0);
    expect(half.limited(1000, 1000)).toBe(0.5); // nothing to read: × decrease
    const up: [number, number][] = [];
    // Sends all it may; looks every 250 ms (a slow sender's own calls are too far apart to show busy time).
    let next = 1000;
    for (let t = 1000; t < 40_000; t += 250) {
      if (t >= next) {
        half.taken(t);
        half.succeeded(t);
        next = t + 1000 / half.rate;
      }
      const r = half.increase(t, 1000 / half.rate);
      if (r !== undefined) up.push([t, r]);
    }
    const first = up.find(([, r]) => r > 0.5);
    expect(first).toBeDefined();
    expect(first![1]).toBeLessThan(0.6);
  });

  test('busy: 70 % of what the limiter allowed over the two last whole windows, the current slot left out', () => {
    // At 10/s, 70 % of two windows is 14 calls; the server accepted 4/s in the last window.
    const run = (sends: number[], at = 2000) => {
      const a = new AdaptiveLimit(opts(), 10, 0);
      const oks = [1000, 1200, 1400, 1600].map((x) => x + at - 2000);
      for (const t of [...sends.map((x) => [x, 0]), ...oks.map((x) => [x, 1])].sort((p, q) => p[0]! - q[0]! || p[1]! - q[1]!)) {
        if (t[1] === 0) a.taken(t[0]!);
        else a.succeeded(t[0]!);
      }
      return a.limited(at, at);
    };
    const spaced = (n: number) => spread(0, 2000, n);
    // Busy: straight to the reading (4); not busy: no lower than half the rate in force (5).
    expect(run(spaced(14))).toBe(4);
    expect(run(spaced(13))).toBe(5);
    // A call in the current slot does not count.
    expect(run([...spaced(13), 2000])).toBe(5);
    // Nor does one older than the two windows.
    expect(run(spread(500, 2500, 14), 2500)).toBe(4);
    expect(run([100, ...spread(500, 2500, 13)], 2500)).toBe(5);
  });
});

describe('a probe refused', () => {
  /** Anchored at 20/s, then busy without a reading (no successes) until the probe has stepped `steps` times above 20. */
  function probing(steps = 3) {
    const { a, t } = anchored(20);
    const rises: [number, number][] = [];
    let now = t;
    while (rises.filter(([, r]) => r > 20).length < steps) now = busy(a, now, 250, rises, false);
    const [prev, cur] = rises.slice(-2).map(([, r]) => r) as [number, number];
    return { a, now, prev, cur, changedAt: rises.at(-1)![0] };
  }

  test('the step before the refused one was held a window: the new anchor is its whole calls', () => {
    const { a, now, prev, cur } = probing();
    expect(prev).toBeGreaterThan(21);
    expect(a.rate).toBe(cur);
    a.limited(now, now);
    expect(a.anchor).toBe(Math.floor(prev));
    // Found above the anchor by more than 10 %? No: same limit again, so the hold doubles.
    expect(a.hold).toBe(Math.floor(prev) <= 22 ? 10_000 : 5000);
    // Busy: the rate restarts just under the anchor, in whole calls.
    expect(a.rate).toBe(Math.ceil(Math.floor(prev) * 0.95));
  });

  test('a call sent before the last rise was refused at the rate before it', () => {
    const { a, now, changedAt } = probing(2); // 21, then one step more
    a.limited(now, changedAt - 1);
    // The refused rate is the previous step: nothing above the anchor was proven.
    expect(a.anchor).toBe(20);
    expect(a.hold).toBe(10_000);
    expect(a.rate).toBe(19);
  });

  test('refused at a fractional earlier step: still nothing proven above the anchor', () => {
    const { a, now, prev, changedAt } = probing(3);
    expect(Math.floor(prev)).toBeLessThan(prev);
    a.limited(now, changedAt - 1);
    expect(a.anchor).toBe(20);
  });

  test('a call sent at the rise itself was refused at the new rate', () => {
    const { a, now, prev, changedAt } = probing();
    a.limited(now, changedAt);
    expect(a.anchor).toBe(Math.floor(prev));
  });

  test('a reading between the anchor and the refused rate sets the anchor; well above it, the hold starts again', () => {
    const { a, now, cur } = probing();
    expect(cur).toBeGreaterThan(24);
    // 24 successes in the last whole window, nothing sent since the last step.
    const from = Math.ceil(now / 500) * 500;
    for (const x of spread(from, from + 1000, 24)) a.succeeded(x);
    a.limited(from + 1000, from + 1000);
    expect(a.anchor).toBe(24);
    expect(a.hold).toBe(5000);
  });

});

describe('the hold after a failed probe', () => {
  /** Busy time from a decrease at `anchor` (at `t`) to the first rate above it. */
  function nextProbe(a: AdaptiveLimit, t: number, anchor: number): { after: number; now: number } {
    const rises: [number, number][] = [];
    let now = t;
    while (!rises.some(([, r]) => r > anchor) && now < t + 60_000) now = busy(a, now, 100, rises);
    return { after: rises.find(([, r]) => r > anchor)![0] - t, now };
  }

  test.each([
    // anchor, first probe (approach 2 s + holdMs), after a failed probe at the same anchor (2 s + max(2 × holdMs, min(maxHoldMs, 50 calls)))
    [2, 7000, 22_000], // 50 calls at 2/s = 25 s: capped at maxHoldMs 20 s
    [4, 7000, 14_500], // 50 calls at 4/s = 12.5 s
    [20, 7000, 12_000], // 50 calls at 20/s = 2.5 s: the doubled hold, 10 s
  ])('anchor %d/s: first probe %d ms after the decrease, %d ms after a failed one', (anchor, first, again) => {
    const { a, t } = anchored(anchor);
    expect(a.anchor).toBe(anchor);
    const one = nextProbe(a, t, anchor);
    expect(one.after).toBeGreaterThan(first - 500);
    expect(one.after).toBeLessThanOrEqual(first);
    a.limited(one.now, one.now);
    expect([a.anchor, a.hold]).toEqual([anchor, 10_000]);
    const two = nextProbe(a, one.now, anchor);
    expect(two.after).toBeGreaterThan(again - 500);
    expect(two.after).toBeLessThanOrEqual(again);
  });
});

describe('a slow limit driven at its own pace rises (regression: at or under 0.5/s it never did)', () => {
  test.each([0.25, 0.4, 0.5, 0.7, 2])('from %f/s, sending at the limit for 10 minutes, it reaches its maximum', (start) => {
    const a = new AdaptiveLimit(opts({ min: 0.1, max: 10 }), start, 0);
    let t = 0;
    while (t < 600_000) {
      const interval = 1000 / a.rate;
      a.taken(t);
      a.succeeded(t + 50);
      a.increase(t + 50, interval);
      t += Math.ceil(interval);
    }
    expect(a.rate).toBe(10);
  });

  test('an endpoint that sends far under its slow limit is not busy: the limit stays', () => {
    const a = new AdaptiveLimit(opts({ min: 0.1, max: 10 }), 0.5, 0);
    for (let t = 0; t < 600_000; t += 8000) {
      a.taken(t);
      a.succeeded(t + 50);
      a.increase(t + 50, 2000);
    }
    expect(a.rate).toBe(0.5);
  });
});
