/**
 * Issue 15, mutation rerun: option resolution of the limiters (rateLimit, sharedQuota,
 * retryBudget, dailyResetUtcHour): each field named in its message, each default and edge.
 */
import { describe, expect, test } from 'vitest';
import { message } from './support.js';
import { resolveBudget } from '../../src/limits/budget.js';
import { resetHour } from '../../src/limits/daily.js';
import { resolveRateLimit } from '../../src/limits/quota.js';
import { resolveStore } from '../../src/limits/store.js';


const F = 'endpoints[0].rateLimit';

describe('resolveRateLimit', () => {
  test('defaults: bucket, 25 ms margin, stop at 95 %', () => {
    expect(resolveRateLimit(F, undefined)).toBeUndefined();
    expect(resolveRateLimit(F, { perSecond: 2 })).toEqual({ perSecond: 2, burst: undefined, mode: 'bucket', marginMs: 25, perDay: undefined, dailyStopFraction: 0.95 });
    expect(resolveRateLimit(F, { perDay: 10 })).toEqual({ perSecond: undefined, burst: undefined, mode: 'bucket', marginMs: 25, perDay: 10, dailyStopFraction: 0.95 });
    expect(resolveRateLimit(F, { perSecond: 1_000_000, burst: 1, marginMs: 0, dailyStopFraction: 1, perDay: 1 })).toEqual({ perSecond: 1_000_000, burst: 1, mode: 'bucket', marginMs: 0, perDay: 1, dailyStopFraction: 1 });
    expect(resolveRateLimit(F, { perSecond: 3, mode: 'paced' })?.mode).toBe('paced');
  });

  test.each([
    [{ perSecond: 0 }, `${F}.perSecond: expected a finite number > 0, got 0`],
    [{ perSecond: 1_000_001 }, `${F}.perSecond: expected a number of calls per second up to 1000000, got 1000001`],
    [{ perDay: 0.5 }, `${F}.perDay: expected a positive integer, got 0.5`],
    [{}, `${F}.perSecond: expected a finite number > 0 (or a perDay), got undefined`],
    [{ perSecond: 1, mode: 'x' }, `${F}.mode: expected one of 'bucket', 'paced', got "x"`],
    [{ perSecond: 1, burst: 0.5 }, `${F}.burst: expected a finite number >= 1, got 0.5`],
    [{ perSecond: 1, burst: 2, mode: 'paced' }, `${F}.burst: expected nothing in 'paced' mode (paced calls never burst), got 2`],
    [{ perSecond: 1, marginMs: -1 }, `${F}.marginMs: expected a finite number >= 0, got -1`],
    [{ perSecond: 1, dailyStopFraction: 0 }, `${F}.dailyStopFraction: expected a finite number > 0, got 0`],
    [{ perSecond: 1, dailyStopFraction: 1.5 }, `${F}.dailyStopFraction: expected a fraction in (0, 1], got 1.5`],
    [{ rps: 1 }, `${F}.rps: unknown option; did you mean 'perSecond'?`],
    [{ requestsPerSecond: 1 }, `${F}.requestsPerSecond: unknown option; did you mean 'perSecond'?`],
    [{ daily: 1 }, `${F}.daily: unknown option; did you mean 'perDay'?`],
  ])('%j', (value, expected) => {
    expect(message(() => resolveRateLimit(F, value))).toBe(expected);
  });
});

describe('resolveStore', () => {
  const store = { acquire: () => Promise.resolve(0) };
  test('defaults: 50 ms, half the quota, retry after 5 s', () => {
    expect(resolveStore(undefined)).toBeUndefined();
    expect(resolveStore({ store })).toEqual({ store, timeoutMs: 50, degradedShare: 0.5, retryAfterMs: 5_000 });
    expect(resolveStore({ store, timeoutMs: 1, degradedShare: 1, retryAfterMs: 0 })).toEqual({ store, timeoutMs: 1, degradedShare: 1, retryAfterMs: 0 });
  });

  test.each([
    [{}, 'sharedQuota.store: expected a LimiterStore ({ acquire(limit) }), got undefined'],
    [{ store: null }, 'sharedQuota.store: expected a LimiterStore ({ acquire(limit) }), got null'],
    [{ store: { acquire: 1 } }, 'sharedQuota.store: expected a LimiterStore ({ acquire(limit) }), got an object'],
    [{ store, degradedShare: 0 }, 'sharedQuota.degradedShare: expected a finite number > 0, got 0'],
    [{ store, degradedShare: 1.5 }, 'sharedQuota.degradedShare: expected a fraction in (0, 1], got 1.5'],
    [{ store, timeoutMs: 0 }, 'sharedQuota.timeoutMs: expected a finite number > 0, got 0'],
    [{ store, retryAfterMs: -1 }, 'sharedQuota.retryAfterMs: expected a finite number >= 0, got -1'],
  ])('%j', (value, expected) => {
    expect(message(() => resolveStore(value))).toBe(expected);
  });
});

describe('resolveBudget and resetHour', () => {
  test('budget defaults and fields', () => {
    expect(resolveBudget(undefined)).toBeUndefined();
    const b = resolveBudget({})!;
    expect([b.ratio, b.minPerSecond, b.windowMs]).toEqual([0.2, 10, 10_000]);
    const c = resolveBudget({ ratio: 0, minPerSecond: 0, windowMs: 1000 })!;
    expect([c.ratio, c.minPerSecond, c.windowMs]).toEqual([0, 0, 1000]);
    expect(message(() => resolveBudget({ ratio: -1 }))).toBe('retryBudget.ratio: expected a finite number >= 0, got -1');
    expect(message(() => resolveBudget({ minPerSecond: -1 }))).toBe('retryBudget.minPerSecond: expected a finite number >= 0, got -1');
    expect(message(() => resolveBudget({ windowMs: 999 }))).toBe('retryBudget.windowMs: expected a finite number >= 1000, got 999');
  });

  test('reset hour: 0 to 23', () => {
    expect(resetHour(undefined)).toBe(0);
    expect(resetHour(0)).toBe(0);
    expect(resetHour(23)).toBe(23);
    for (const bad of [-1, 24, 1.5, '3']) expect(message(() => resetHour(bad))).toBe(`dailyResetUtcHour: expected an integer hour from 0 to 23, got ${typeof bad === 'string' ? '"3"' : bad}`);
  });
});
