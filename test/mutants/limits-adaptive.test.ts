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
