/**
 * Issue 15, limiters mutation rerun: `rateLimit.adaptive` option checks, message by message
 * (resolveAdaptive, called as the pool does with the field path).
 */
import { describe, expect, test } from 'vitest';
import { ADAPTIVE_DEFAULTS, resolveAdaptive } from '../../src/limits/adaptive.js';
import { CONFIGURED_MAX_PER_SECOND } from '../../src/limits/ceiling.js';
import { message } from './support.js';

const F = 'endpoints[0].rateLimit.adaptive';
const resolve = (value: unknown, perSecond?: number) => resolveAdaptive(F, value, perSecond);

describe('rateLimit.adaptive options', () => {
  test('max: > 0, at most CONFIGURED_MAX_PER_SECOND, or taken from perSecond', () => {
    expect(message(() => resolve({ max: 0 }))).toBe(`${F}.max: expected a finite number > 0, got 0`);
    expect(message(() => resolve({}))).toBe(`${F}.max: expected a number of calls per second > 0 (or a rateLimit.perSecond), got undefined`);
    expect(message(() => resolve({ max: CONFIGURED_MAX_PER_SECOND * 2 }))).toBe(`${F}.max: expected a number of calls per second up to ${CONFIGURED_MAX_PER_SECOND}, got ${CONFIGURED_MAX_PER_SECOND * 2}`);
    expect(resolve({ max: CONFIGURED_MAX_PER_SECOND })!.max).toBe(CONFIGURED_MAX_PER_SECOND);
    expect(resolve(true, 8)!.max).toBe(8);
  });

  test('min: > 0, at most max; default 1 % of max', () => {
    expect(message(() => resolve({ max: 10, min: 0 }))).toBe(`${F}.min: expected a finite number > 0, got 0`);
    expect(message(() => resolve({ max: 10, min: 11 }))).toBe(`${F}.min: expected a number of calls per second <= max (10), got 11`);
    expect(resolve({ max: 10, min: 10 })!.min).toBe(10);
    expect(resolve({ max: 10 })!.min).toBe(0.1);
  });

  test("the aliases floor and ceiling point to min and max", () => {
    expect(message(() => resolve({ floor: 1, max: 10 }))).toBe(`${F}.floor: unknown option; did you mean 'min'?`);
    expect(message(() => resolve({ ceiling: 10 }))).toBe(`${F}.ceiling: unknown option; did you mean 'max'?`);
  });

  test('perSecond (the start rate) within [min, max], bounds included', () => {
    expect(message(() => resolve({ min: 2, max: 10 }, 1))).toBe('endpoints[0].rateLimit.perSecond: expected a start rate within adaptive [min, max] = [2, 10], got 1');
    expect(message(() => resolve({ min: 2, max: 10 }, 11))).toContain('endpoints[0].rateLimit.perSecond:');
    expect(resolve({ min: 2, max: 10 }, 2)!.min).toBe(2);
    expect(resolve({ min: 2, max: 10 }, 10)!.max).toBe(10);
    expect(resolve({ min: 2, max: 10 })!.max).toBe(10);
  });

  test('decrease: in (0, 1)', () => {
    expect(message(() => resolve({ max: 10, decrease: 1 }))).toBe(`${F}.decrease: expected a factor in (0, 1), got 1`);
    expect(message(() => resolve({ max: 10, decrease: 0 }))).toBe(`${F}.decrease: expected a finite number > 0, got 0`);
    expect(resolve({ max: 10, decrease: 0.5 })!.decrease).toBe(0.5);
  });

  test('windowMs > 0, holdMs >= 0, maxHoldMs >= holdMs (default the larger of 15 s and holdMs), doublingMs > 0', () => {
    expect(message(() => resolve({ max: 10, windowMs: 0 }))).toBe(`${F}.windowMs: expected a finite number > 0, got 0`);
    expect(message(() => resolve({ max: 10, holdMs: -1 }))).toBe(`${F}.holdMs: expected a finite number >= 0, got -1`);
    expect(message(() => resolve({ max: 10, maxHoldMs: -1 }))).toBe(`${F}.maxHoldMs: expected a finite number >= 0, got -1`);
    expect(message(() => resolve({ max: 10, holdMs: 9000, maxHoldMs: 8999 }))).toBe(`${F}.maxHoldMs: expected a number of milliseconds >= holdMs (9000), got 8999`);
    expect(message(() => resolve({ max: 10, doublingMs: 0 }))).toBe(`${F}.doublingMs: expected a finite number > 0, got 0`);
    const r = resolve({ max: 10, windowMs: 2000, holdMs: 9000, maxHoldMs: 9000, doublingMs: 4000 })!;
    expect([r.windowMs, r.holdMs, r.maxHoldMs, r.doublingMs]).toEqual([2000, 9000, 9000, 4000]);
    expect(resolve({ max: 10, holdMs: 0 })!.holdMs).toBe(0);
    expect(resolve({ max: 10, holdMs: 20_000 })!.maxHoldMs).toBe(20_000);
    expect(resolve({ max: 10 })).toEqual({ min: 0.1, max: 10, ...ADAPTIVE_DEFAULTS });
  });
});
