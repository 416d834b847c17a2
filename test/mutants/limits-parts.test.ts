/**
 * Issue 15, limiters mutation rerun: the small parts, number by number (learned ceiling
 * recovery and clamp, rolling counter rate over a young counter, token bucket refill,
 * daily counter on its wall clock, retry budget windows, option field names).
 * Pure: plain numbers for time.
 */
import { describe, expect, test } from 'vitest';
import { TokenBucket } from '../../src/limits/bucket.js';
import { RetryBudget, resolveBudget } from '../../src/limits/budget.js';
import { LEARNED_MAX_PER_SECOND, LEARNED_MIN_PER_SECOND, LearnedCeiling, clampLearned } from '../../src/limits/ceiling.js';
import { DailyCounter, resetHour } from '../../src/limits/daily.js';
import { resolveStore } from '../../src/limits/store.js';
import { RollingCounter } from '../../src/limits/window.js';
import { message } from './support.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;

describe('LearnedCeiling recovery', () => {
  const r = { quietMs: 1000, stepMs: 1000, stepFraction: 0.1 };

  test('the first step adds stepFraction × target, the next one twice that', () => {
    const c = new LearnedCeiling(10, 100, 0);
    expect(c.recover(1000, r)).toBe(true);
    expect(c.value).toBe(20);
    expect(c.recover(1999, r)).toBe(false);
    expect(c.recover(2500, r)).toBe(true);
    expect(c.value).toBe(40);
  });

  test('floating steps land exactly on the target', () => {
    const c = new LearnedCeiling(0.1, 1, 0);
    // 0.1 + 3 × 0.3 is 0.9999999999999999 in floating point.
    expect(c.recover(3000, { ...r, stepFraction: 0.3 })).toBe(true);
    expect(c.value).toBe(1);
    expect(c.recover(10_000, r)).toBe(false);
  });

  test('clampLearned: into [LEARNED_MIN_PER_SECOND, LEARNED_MAX_PER_SECOND]', () => {
    expect(clampLearned(0)).toBe(LEARNED_MIN_PER_SECOND);
    expect(clampLearned(1e-9)).toBe(LEARNED_MIN_PER_SECOND);
    expect(clampLearned(5)).toBe(5);
    expect(clampLearned(1e12)).toBe(LEARNED_MAX_PER_SECOND);
  });
});

describe('RollingCounter', () => {
  test('a young counter: its rate is over its age (at least a second), from its first event', () => {
    const c = new RollingCounter(10, 1000);
    c.add(0);
    c.add(3000);
    expect(c.rate(4000, 10)).toBe(0.5);
    const late = new RollingCounter(10, 1000);
    late.add(2000);
    late.add(2500); // within the first event's bucket
    expect(late.rate(4000, 10)).toBe(1);
  });

  test('a rate over several buckets sums all of them', () => {
    const c = new RollingCounter(10, 1000);
    c.add(0);
    c.add(2500);
    expect(c.rate(2500, 3)).toBeCloseTo(0.8, 12);
    expect(c.rate(2500, 1)).toBe(1);
  });

  test('nothing counted: rate 0', () => {
    expect(new RollingCounter(10, 1000).rate(5000, 10)).toBe(0);
  });
});

describe('TokenBucket refill', () => {
  test('an earlier `now` neither refills nor drains', () => {
    const b = new TokenBucket(10, 5, 1000);
    for (let i = 0; i < 5; i++) b.take(1000);
    expect(b.tokens(500)).toBe(0);
    expect(b.tokens(1100)).toBeCloseTo(1, 9);
  });

  test('a full bucket stays at its burst', () => {
    const b = new TokenBucket(10, 2, 0);
    expect(b.tokens(10_000)).toBe(2);
    b.take(10_000);
    expect(b.tokens(10_050)).toBeCloseTo(1.5, 9);
  });
});

describe('DailyCounter on a wall clock', () => {
  test('the first period ends at the reset after the wall time, not after `now`', () => {
    // Monotonic time far from the calendar: the counter must read the wall clock.
    const wall = DAY + HOUR;
    const d = new DailyCounter(2, 1, 0, 10 * DAY, () => wall);
    d.take(10 * DAY);
    d.take(10 * DAY);
    expect(d.waitMs(10 * DAY)).toBe(23 * HOUR);
  });

  test('dailyResetUtcHour: an integer from 0 to 23', () => {
    expect(resetHour(0)).toBe(0);
    expect(resetHour(23)).toBe(23);
    for (const bad of ['3', null, true, 3.5, -1, 24, Number.NaN]) {
      expect(message(() => resetHour(bad))).toMatch(/^dailyResetUtcHour: /);
    }
  });
});

describe('RetryBudget window', () => {
  test('the window is counted in one-second buckets', () => {
    const b = new RetryBudget(1, 0, 10_000);
    for (let i = 0; i < 5; i++) b.deposit(9000);
    // 1.5 s later the calls of 9 s are still in the last 10 s.
    expect(b.tryWithdraw(10_500)).toBe(true);
    // They leave it 10 s after their second.
    expect(b.tryWithdraw(19_500)).toBe(false);
  });

  test('option errors name their field', () => {
    expect(message(() => resolveBudget(5))).toMatch(/^retryBudget: /);
    expect(message(() => resolveBudget({ ratio: 0.1, bogus: 1 }))).toMatch(/^retryBudget\.bogus: /);
    expect(message(() => resolveStore(5))).toMatch(/^sharedQuota: /);
    expect(message(() => resolveStore({ store: { acquire() {} }, bogus: 1 }))).toMatch(/^sharedQuota\.bogus: /);
  });
});
