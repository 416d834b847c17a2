/**
 * Issue 15, mutation rerun: the peak-EWMA latency tracker, number by number.
 */
import { describe, expect, test } from 'vitest';
import { LatencyTracker } from '../../src/selection/latency.js';

const DECAY = 1000;
const PENALTY = 5000;

describe('LatencyTracker', () => {
  test('no history: the cold-start estimate; the first sample is taken as is', () => {
    const t = new LatencyTracker();
    expect(t.estimate(42)).toBe(42);
    t.observe(0, 100, false, DECAY, PENALTY);
    expect(t.estimate(42)).toBe(100);
  });

  test('a slower sample is taken at once; a faster one decays in with weight exp(-elapsed / decay)', () => {
    const t = new LatencyTracker();
    t.observe(0, 100, false, DECAY, PENALTY);
    t.observe(10, 300, false, DECAY, PENALTY);
    expect(t.estimate(0)).toBe(300);
    t.observe(1010, 100, false, DECAY, PENALTY);
    const w = Math.exp(-1);
    expect(t.estimate(0)).toBeCloseTo(300 * w + 100 * (1 - w), 9);
    // No time elapsed: the faster sample has no weight yet.
    const before = t.estimate(0);
    t.observe(1010, 1, false, DECAY, PENALTY);
    expect(t.estimate(0)).toBeCloseTo(before, 9);
    // A clock that steps back counts as no time elapsed, not negative time.
    t.observe(500, 1, false, DECAY, PENALTY);
    expect(t.estimate(0)).toBeCloseTo(before, 9);
  });

  test('a failure counts as at least the penalty and stays out of the percentile ring', () => {
    const t = new LatencyTracker();
    t.observe(0, 10, true, DECAY, PENALTY);
    expect(t.estimate(0)).toBe(PENALTY);
    expect(t.successes).toBe(0);
    const u = new LatencyTracker();
    u.observe(0, 9000, true, DECAY, PENALTY);
    expect(u.estimate(0)).toBe(9000);
  });

  test('observeAtLeast only raises the estimate, and counts as history', () => {
    const t = new LatencyTracker();
    t.observeAtLeast(0, 50, 10_000);
    expect(t.estimate(9)).toBe(50);
    t.observeAtLeast(0, 40, 10_000);
    expect(t.estimate(9)).toBe(50);
    t.observeAtLeast(0, 50, 10_000);
    expect(t.estimate(9)).toBe(50);
    t.observeAtLeast(0, 70, 10_000);
    expect(t.estimate(9)).toBe(70);
    expect(t.successes).toBe(0);
    // It also stamps the time: a faster sample 1 decay later weighs 1 - 1/e.
    t.observeAtLeast(1000, 100, 10_000);
    t.observe(2000, 0, false, DECAY, PENALTY);
    expect(t.estimate(0)).toBeCloseTo(100 * Math.exp(-1), 9);
  });

  test('with only lower bounds, the estimate is never under the cold start (a bound of 50 ms says less than a cold start of 999)', () => {
    const t = new LatencyTracker();
    t.observeAtLeast(0, 50, 10_000);
    expect(t.estimate(999)).toBe(999);
    expect(t.estimate(20)).toBe(50);
    // A bound of 0 ms (a hedge that lost at once on the fake clock) leaves the endpoint as unknown.
    const z = new LatencyTracker();
    z.observeAtLeast(0, 0, 10_000);
    expect(z.estimate(300)).toBe(300);
    // One real sample and the history is the samples' again, under the cold start too.
    t.observe(10, 30, false, DECAY, PENALTY);
    const w = Math.exp(-10 / DECAY);
    expect(t.estimate(999)).toBeCloseTo(50 * w + 30 * (1 - w), 9);
    // A bound after a real sample raises it as before, and the cold start no longer counts.
    t.observeAtLeast(20, 60, 10_000);
    expect(t.estimate(999)).toBe(60);
  });

  test('percentiles over the last 64 successes, undefined below the minimum', () => {
    const t = new LatencyTracker();
    for (let i = 1; i <= 10; i++) t.observe(i, i * 10, false, DECAY, PENALTY);
    expect(t.successes).toBe(10);
    expect(t.percentile(0.5, 11)).toBeUndefined();
    expect(t.percentile(0.5, 10)).toBe(60);
    expect(t.percentile(0, 1)).toBe(10);
    expect(t.percentile(0.95, 1)).toBe(100);
    expect(t.percentile(1, 1)).toBe(100);
    for (let i = 0; i < 70; i++) t.observe(100 + i, 1000 + i, false, DECAY, PENALTY);
    expect(t.successes).toBe(64);
    // The ring holds the 64 newest: 1006 .. 1069.
    expect(t.percentile(0, 1)).toBe(1006);
    expect(t.percentile(0.99, 1)).toBe(1069);
  });
});
